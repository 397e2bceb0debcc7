package floe.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Table;
import org.apache.iceberg.actions.RewriteDataFilesActionResult;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.flink.CatalogLoader;
import org.apache.iceberg.flink.actions.Actions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Flink SQL with Iceberg's Flink runtime against a real floe: the statements
 * a Flink user types, in batch mode on a local MiniCluster (one per job,
 * inside this JVM), through catalogs made with CREATE CATALOG on floe's
 * warehouses {@code lake}, {@code lake@BRANCH} and {@code lake@TAG}.
 *
 * <p>run.sh passes -Dfloe.uri (the server's base URI) and -Dfloe.bin (the
 * floe binary, for the CLI's branch, tag and merge). Every test works in a
 * database of its own, so the tests do not depend on each other's data.
 */
class FlinkSqlTest {
  private static String uri;
  private static String floeBin;
  private static TableEnvironment batch;

  @BeforeAll
  static void setUp() throws Exception {
    uri = System.getProperty("floe.uri");
    assertNotNull(uri, "set -Dfloe.uri=http://127.0.0.1:PORT (run.sh does)");
    floeBin = System.getProperty("floe.bin");
    assertNotNull(floeBin, "set -Dfloe.bin=/path/to/bin/floe (run.sh does)");
    floe("branch", "create", "dev", "--from", "main");
    batch = tableEnv(RuntimeExecutionMode.BATCH);
    createCatalog(batch, "lake", "lake");
    createCatalog(batch, "dev", "lake@dev");
  }

  /**
   * A table environment whose jobs each run on a MiniCluster bounded for a
   * shared 2-core machine: one slot, small managed and network memory, every
   * endpoint on loopback.
   */
  private static TableEnvironment tableEnv(RuntimeExecutionMode mode) {
    EnvironmentSettings settings =
        EnvironmentSettings.newInstance().withConfiguration(miniCluster(mode)).build();
    return TableEnvironment.create(settings);
  }

  private static Configuration miniCluster(RuntimeExecutionMode mode) {
    Configuration conf = new Configuration();
    conf.set(ExecutionOptions.RUNTIME_MODE, mode);
    conf.set(CoreOptions.DEFAULT_PARALLELISM, 1);
    conf.set(TaskManagerOptions.NUM_TASK_SLOTS, 1);
    conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("64m"));
    conf.set(TaskManagerOptions.NETWORK_MEMORY_MIN, MemorySize.parse("32m"));
    conf.set(TaskManagerOptions.NETWORK_MEMORY_MAX, MemorySize.parse("32m"));
    conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
    conf.set(RestOptions.ADDRESS, "127.0.0.1");
    conf.set(JobManagerOptions.BIND_HOST, "127.0.0.1");
    conf.set(JobManagerOptions.ADDRESS, "127.0.0.1");
    conf.set(TaskManagerOptions.BIND_HOST, "127.0.0.1");
    conf.set(TaskManagerOptions.HOST, "127.0.0.1");
    return conf;
  }

  /**
   * CREATE CATALOG as a Flink user writes it for floe. Iceberg's client
   * caches tables by default; off, so that every statement loads from floe
   * and sees merges done behind the engine's back.
   */
  private static void createCatalog(TableEnvironment env, String name, String warehouse) {
    env.executeSql(
        "CREATE CATALOG `" + name + "` WITH ("
            + "'type'='iceberg', 'catalog-type'='rest', 'uri'='" + uri + "', "
            + "'warehouse'='" + warehouse + "', 'cache-enabled'='false')");
  }

  /** Runs one statement and waits for its job, if it has one, to end. */
  private static void sql(String statement) throws Exception {
    TableResult result = batch.executeSql(statement);
    if (result.getJobClient().isPresent()) {
      result.await(5, TimeUnit.MINUTES);
    }
  }

  /** The rows of a query, each as its fields joined by ", ", sorted. */
  private static List<String> rows(String query) throws Exception {
    List<String> out = new ArrayList<>();
    try (CloseableIterator<Row> it = batch.executeSql(query).collect()) {
      while (it.hasNext()) {
        out.add(format(it.next()));
      }
    }
    Collections.sort(out);
    return out;
  }

  private static String format(Row row) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < row.getArity(); i++) {
      if (i > 0) {
        b.append(", ");
      }
      b.append(row.getField(i));
    }
    return b.toString();
  }

  private static String one(String query) throws Exception {
    List<String> r = rows(query);
    assertEquals(1, r.size(), query + " answered " + r);
    return r.get(0);
  }

  /** The ids of a table's snapshots, oldest first. */
  private static List<Long> snapshotIds(String table) throws Exception {
    List<Long> ids = new ArrayList<>();
    try (CloseableIterator<Row> it =
        batch.executeSql("SELECT snapshot_id, committed_at FROM " + meta(table, "snapshots")).collect()) {
      List<Row> all = new ArrayList<>();
      it.forEachRemaining(all::add);
      all.sort((a, b) -> ((Comparable) a.getField(1)).compareTo(b.getField(1)));
      for (Row r : all) {
        ids.add((Long) r.getField(0));
      }
    }
    return ids;
  }

  /** A metadata table's name: lake.db.`t$snapshots`. */
  private static String meta(String table, String kind) {
    int dot = table.lastIndexOf('.');
    return table.substring(0, dot) + ".`" + table.substring(dot + 1) + "$" + kind + "`";
  }

  private static String newDatabase(String catalog) throws Exception {
    String db = "f_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    sql("CREATE DATABASE " + catalog + "." + db);
    return db;
  }

  /** Runs the floe CLI against the server under test; its output. */
  private static String floe(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(floeBin);
    Collections.addAll(cmd, args);
    cmd.add("--server");
    cmd.add(uri);
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail("floe " + String.join(" ", args) + " did not finish");
    }
    assertEquals(0, p.exitValue(), "floe " + String.join(" ", args) + ":\n" + out);
    return out;
  }

  /** GET on floe's Iceberg REST API; the body, after checking the status. */
  private static String restGet(String path) throws Exception {
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    HttpResponse<String> resp =
        client.send(
            HttpRequest.newBuilder(URI.create(uri + path)).timeout(Duration.ofSeconds(30)).build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, resp.statusCode(), path + ": " + resp.body());
    return resp.body();
  }

  /** The messages of an exception and its causes, one a line. */
  private static String messages(Throwable t) {
    StringBuilder b = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      b.append(c.getClass().getName()).append(": ").append(c.getMessage()).append('\n');
    }
    return b.toString();
  }

  @Test
  void catalogsOnWarehouseAndBranch() throws Exception {
    List<String> catalogs = rows("SHOW CATALOGS");
    assertTrue(catalogs.contains("lake") && catalogs.contains("dev"), catalogs.toString());
    String db = newDatabase("lake");
    assertTrue(rows("SHOW DATABASES IN lake").contains(db));
    // dev was made from main before this database: it does not see it.
    assertTrue(!rows("SHOW DATABASES IN dev").contains(db));
  }

  @Test
  void ddlAndDml() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".orders";
    sql("CREATE TABLE " + t + " (id BIGINT, category STRING, amount DOUBLE, p INT) "
        + "PARTITIONED BY (p) WITH ('format-version'='2', 'write.format.default'='parquet')");
    assertEquals(List.of("orders"), rows("SHOW TABLES IN lake." + db));
    sql("INSERT INTO " + t + " VALUES (1, 'books', 10.0, 1), (2, 'games', 20.0, 1), (3, 'music', 30.0, 2)");
    sql("INSERT INTO " + t + " VALUES (4, 'books', 40.0, 2)");
    assertEquals(
        List.of("1, books, 10.0, 1", "2, games, 20.0, 1", "3, music, 30.0, 2", "4, books, 40.0, 2"),
        rows("SELECT * FROM " + t));
    assertEquals(List.of("books, 50.0", "games, 20.0", "music, 30.0"),
        rows("SELECT category, SUM(amount) FROM " + t + " GROUP BY category"));
    // Two partitions, one data file per insert and partition.
    assertEquals(List.of("1", "2"), rows("SELECT DISTINCT `partition`.`p` FROM " + meta(t, "partitions")));
    assertEquals(2, snapshotIds(t).size());

    sql("ALTER TABLE " + t + " SET ('commit.retry.num-retries'='7')");
    assertTrue(restGet("/v1/lake/namespaces/" + db + "/tables/orders").contains("\"commit.retry.num-retries\":\"7\""));
    sql("ALTER TABLE " + t + " ADD (note STRING)");
    sql("INSERT INTO " + t + " VALUES (5, 'games', 50.0, 3, 'new')");
    assertEquals(List.of("1, null", "5, new"),
        rows("SELECT id, note FROM " + t + " WHERE id IN (1, 5)"));

    sql("CREATE TABLE lake." + db + ".copy (id BIGINT, amount DOUBLE)");
    sql("INSERT INTO lake." + db + ".copy SELECT id, amount FROM " + t + " WHERE p = 2");
    assertEquals(List.of("3, 30.0", "4, 40.0"), rows("SELECT * FROM lake." + db + ".copy"));
    sql("DROP TABLE lake." + db + ".copy");
    assertEquals(List.of("orders"), rows("SHOW TABLES IN lake." + db));
  }

  @Test
  void formatV3() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".events";
    sql("CREATE TABLE " + t + " (id BIGINT, kind STRING) WITH ('format-version'='3')");
    sql("INSERT INTO " + t + " VALUES (1, 'a'), (2, 'b')");
    sql("INSERT INTO " + t + " VALUES (3, 'c')");
    assertEquals(List.of("1, a", "2, b", "3, c"), rows("SELECT * FROM " + t));
    String loaded = restGet("/v1/lake/namespaces/" + db + "/tables/events");
    assertTrue(loaded.contains("\"format-version\":3"), loaded);
    // v3 assigns row ids: the table's next-row-id counts the three rows.
    assertTrue(loaded.contains("\"next-row-id\":3"), loaded);
  }

  @Test
  void primaryKeyUpsertsWriteEqualityDeletes() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".users";
    sql("CREATE TABLE " + t + " (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED) "
        + "WITH ('format-version'='2', 'write.upsert.enabled'='true')");
    sql("INSERT INTO " + t + " VALUES (1, 'ann'), (2, 'bob')");
    sql("INSERT INTO " + t + " VALUES (2, 'bea'), (3, 'cal')");
    sql("INSERT INTO " + t + " VALUES (1, 'amy')");
    assertEquals(List.of("1, amy", "2, bea", "3, cal"), rows("SELECT * FROM " + t));
    // The upserts replaced rows with equality deletes (content 2), not by
    // rewriting the data files.
    List<String> contents = rows("SELECT DISTINCT content FROM " + meta(t, "files"));
    assertTrue(contents.contains("2"), "no equality delete files: " + contents);
  }

  @Test
  void insertOverwrite() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".sales";
    sql("CREATE TABLE " + t + " (id BIGINT, amount DOUBLE, p INT) PARTITIONED BY (p)");
    sql("INSERT INTO " + t + " VALUES (1, 1.0, 1), (2, 2.0, 1), (3, 3.0, 2)");
    // Dynamic: replaces only the partitions the query writes.
    sql("INSERT OVERWRITE " + t + " SELECT 10, 10.0, 1");
    assertEquals(List.of("10, 10.0, 1", "3, 3.0, 2"), rows("SELECT * FROM " + t));
    // Static partition.
    sql("INSERT OVERWRITE " + t + " PARTITION (p=2) SELECT 20, 20.0");
    assertEquals(List.of("10, 10.0, 1", "20, 20.0, 2"), rows("SELECT * FROM " + t));
    List<String> ops = rows("SELECT operation FROM " + meta(t, "snapshots"));
    assertEquals(List.of("append", "overwrite", "overwrite"), ops);
  }

  @Test
  void timeTravel() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".log";
    sql("CREATE TABLE " + t + " (id BIGINT)");
    sql("INSERT INTO " + t + " VALUES (1)");
    sql("INSERT INTO " + t + " VALUES (2)");
    sql("INSERT INTO " + t + " VALUES (3)");
    List<Long> ids = snapshotIds(t);
    assertEquals(3, ids.size());
    assertEquals(List.of("1"), rows("SELECT * FROM " + t + " /*+ OPTIONS('snapshot-id'='" + ids.get(0) + "') */"));
    assertEquals(List.of("1", "2"), rows("SELECT * FROM " + t + " /*+ OPTIONS('snapshot-id'='" + ids.get(1) + "') */"));
    // Incremental read between two snapshots.
    assertEquals(List.of("2", "3"), rows("SELECT * FROM " + t + " /*+ OPTIONS('start-snapshot-id'='" + ids.get(0)
        + "', 'end-snapshot-id'='" + ids.get(2) + "') */"));
    // By time: the committed_at of the second snapshot.
    String at = one("SELECT CAST(UNIX_TIMESTAMP(CAST(committed_at AS STRING)) AS BIGINT) * 1000 FROM "
        + meta(t, "snapshots") + " WHERE snapshot_id = " + ids.get(1));
    long ms = Long.parseLong(at) + 999; // committed_at to the second, rounded down
    List<String> asOf = rows("SELECT * FROM " + t + " /*+ OPTIONS('as-of-timestamp'='" + ms + "') */");
    assertTrue(asOf.equals(List.of("1", "2")) || asOf.equals(List.of("1", "2", "3")), asOf.toString());
  }

  @Test
  void catalogBranchMergedWithFloeMerge() throws Exception {
    String branch = "etl_" + UUID.randomUUID().toString().substring(0, 6);
    String db = newDatabase("lake");
    String t = db + ".orders";
    sql("CREATE TABLE lake." + t + " (id BIGINT, p INT) PARTITIONED BY (p)");
    sql("INSERT INTO lake." + t + " VALUES (1, 1)");
    floe("branch", "create", branch, "--from", "main");
    createCatalog(batch, branch, "lake@" + branch);

    sql("INSERT INTO `" + branch + "`." + t + " VALUES (2, 2)");
    sql("CREATE TABLE `" + branch + "`." + db + ".added (id BIGINT)");
    sql("INSERT INTO `" + branch + "`." + db + ".added VALUES (7)");
    // Main goes on too, in another partition.
    sql("INSERT INTO lake." + t + " VALUES (3, 3)");
    assertEquals(List.of("1, 1", "3, 3"), rows("SELECT * FROM lake." + t));
    assertEquals(List.of("1, 1", "2, 2"), rows("SELECT * FROM `" + branch + "`." + t));
    assertEquals(List.of("orders"), rows("SHOW TABLES IN lake." + db));

    floe("merge", branch, "--into", "main");
    assertEquals(List.of("1, 1", "2, 2", "3, 3"), rows("SELECT * FROM lake." + t));
    assertEquals(List.of("7"), rows("SELECT * FROM lake." + db + ".added"));
    // Flink writes on top of the merge.
    sql("INSERT INTO lake." + t + " VALUES (4, 4)");
    assertEquals(4, rows("SELECT * FROM lake." + t).size());
  }

  @Test
  void catalogTagIsReadOnly() throws Exception {
    String db = newDatabase("lake");
    String t = db + ".orders";
    sql("CREATE TABLE lake." + t + " (id BIGINT)");
    sql("INSERT INTO lake." + t + " VALUES (1)");
    String tag = "rel_" + UUID.randomUUID().toString().substring(0, 6);
    floe("tag", "create", tag, "--from", "main");
    createCatalog(batch, tag, "lake@" + tag);
    sql("INSERT INTO lake." + t + " VALUES (2)");

    assertEquals(List.of("1"), rows("SELECT * FROM `" + tag + "`." + t));
    Exception insert = assertThrows(Exception.class, () -> sql("INSERT INTO `" + tag + "`." + t + " VALUES (3)"));
    assertTrue(messages(insert).contains("is read-only: it names a tag, not a branch"), messages(insert));
    Exception create = assertThrows(Exception.class, () -> sql("CREATE TABLE `" + tag + "`." + db + ".other (id BIGINT)"));
    assertTrue(messages(create).contains("is read-only: it names a tag, not a branch"), messages(create));
    assertEquals(List.of("1", "2"), rows("SELECT * FROM lake." + t));
  }

  /**
   * A table's own branches and tags (Iceberg refs inside the table, not
   * floe's catalog branches): made with Iceberg's Java API, as Flink SQL has
   * no statement for them, then written and read with Flink's read and
   * write options.
   */
  @Test
  void tableBranchAndTag() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".audited";
    sql("CREATE TABLE " + t + " (id BIGINT)");
    sql("INSERT INTO " + t + " VALUES (1)");
    Table table = loadTable(db, "audited");
    long first = table.currentSnapshot().snapshotId();
    table.manageSnapshots().createTag("v1", first).createBranch("audit", first).commit();

    sql("INSERT INTO " + t + " /*+ OPTIONS('branch'='audit') */ VALUES (2)");
    sql("INSERT INTO " + t + " VALUES (3)");
    assertEquals(List.of("1", "2"), rows("SELECT * FROM " + t + " /*+ OPTIONS('branch'='audit') */"));
    assertEquals(List.of("1", "3"), rows("SELECT * FROM " + t));
    assertEquals(List.of("1"), rows("SELECT * FROM " + t + " /*+ OPTIONS('tag'='v1') */"));
    assertEquals(List.of("BRANCH, audit", "BRANCH, main", "TAG, v1"),
        rows("SELECT type, name FROM " + meta(t, "refs")));
  }

  /** Upserts on a format v3 table: equality deletes there too. */
  @Test
  void primaryKeyUpsertsOnV3() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".users3";
    sql("CREATE TABLE " + t + " (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED) "
        + "WITH ('format-version'='3', 'write.upsert.enabled'='true')");
    sql("INSERT INTO " + t + " VALUES (1, 'ann'), (2, 'bob')");
    sql("INSERT INTO " + t + " VALUES (2, 'bea')");
    assertEquals(List.of("1, ann", "2, bea"), rows("SELECT * FROM " + t));
    assertTrue(rows("SELECT DISTINCT content FROM " + meta(t, "files")).contains("2"));
  }

  /** The table through Iceberg's Java API, on the same REST catalog. */
  private static Table loadTable(String db, String name) {
    Catalog catalog =
        CatalogLoader.rest("lake", new org.apache.hadoop.conf.Configuration(), Map.of("uri", uri, "warehouse", "lake"))
            .loadCatalog();
    return catalog.loadTable(TableIdentifier.of(db, name));
  }

  /**
   * Maintenance from a Flink job: Iceberg's Flink action compacts a table's
   * small files into one and commits a replace snapshot through floe.
   * Expiring snapshots is refused by the client itself, since floe keeps
   * gc.enabled=false on every table (catalog branches share files; `floe gc`
   * deletes what no reference reaches).
   */
  @Test
  void rewriteDataFilesAndExpireRefused() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".small";
    sql("CREATE TABLE " + t + " (id BIGINT, name STRING)");
    for (int i = 1; i <= 3; i++) {
      sql("INSERT INTO " + t + " VALUES (" + i + ", 'n" + i + "')");
    }
    assertEquals(3, rows("SELECT file_path FROM " + meta(t, "files")).size());

    Table table = loadTable(db, "small");
    StreamExecutionEnvironment env =
        StreamExecutionEnvironment.getExecutionEnvironment(miniCluster(RuntimeExecutionMode.BATCH));
    RewriteDataFilesActionResult result = Actions.forTable(env, table).rewriteDataFiles().execute();
    assertEquals(3, result.deletedDataFiles().size());
    assertEquals(1, result.addedDataFiles().size());

    assertEquals(List.of("1, n1", "2, n2", "3, n3"), rows("SELECT * FROM " + t));
    assertEquals(1, rows("SELECT file_path FROM " + meta(t, "files")).size());
    assertTrue(rows("SELECT operation FROM " + meta(t, "snapshots")).contains("replace"));

    table.refresh();
    assertEquals("false", table.properties().get("gc.enabled"));
    ValidationException e = assertThrows(ValidationException.class,
        () -> table.expireSnapshots().expireOlderThan(System.currentTimeMillis() + 1000).retainLast(1).commit());
    assertTrue(e.getMessage().contains("GC is disabled"), e.getMessage());
    assertEquals(4, snapshotIds(t).size());
  }

  /**
   * Flink's CREATE CATALOG asks floe for /v1/config at once; on a branch not
   * made yet, the error Flink shows says so and how to make it.
   */
  @Test
  void catalogOnMissingBranchSaysHowToCreateIt() throws Exception {
    Exception e = assertThrows(Exception.class, () -> createCatalog(batch, "nosuch", "lake@nosuch"));
    String msg = messages(e);
    System.out.println("CREATE CATALOG on lake@nosuch failed as expected:\n" + msg);
    assertTrue(msg.contains("reference \"nosuch\" does not exist"), msg);
    assertTrue(msg.contains("floe branch create nosuch --from main"), msg);
    floe("branch", "create", "nosuch", "--from", "main");
    createCatalog(batch, "nosuch", "lake@nosuch");
    assertTrue(rows("SHOW CATALOGS").contains("nosuch"));
  }

  /**
   * A streaming read of appends: Iceberg's source in streaming mode picks up
   * each new snapshot. The job never ends by itself; the test reads the rows
   * it expects and then closes the result, which cancels the job.
   */
  @Test
  @Timeout(value = 240, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void streamingReadOfAppends() throws Exception {
    String db = newDatabase("lake");
    String t = "lake." + db + ".appends";
    sql("CREATE TABLE " + t + " (id BIGINT)");
    sql("INSERT INTO " + t + " VALUES (1), (2)");

    TableEnvironment streaming = tableEnv(RuntimeExecutionMode.STREAMING);
    createCatalog(streaming, "lake", "lake");
    List<Long> seen = new ArrayList<>();
    try (CloseableIterator<Row> it = streaming.executeSql(
        "SELECT id FROM " + t + " /*+ OPTIONS('streaming'='true', 'monitor-interval'='1s') */").collect()) {
      while (seen.size() < 2 && it.hasNext()) {
        seen.add((Long) it.next().getField(0));
      }
      sql("INSERT INTO " + t + " VALUES (3)");
      sql("INSERT INTO " + t + " VALUES (4), (5)");
      while (seen.size() < 5 && it.hasNext()) {
        seen.add((Long) it.next().getField(0));
      }
    }
    Collections.sort(seen);
    assertEquals(List.of(1L, 2L, 3L, 4L, 5L), seen);
  }
}
