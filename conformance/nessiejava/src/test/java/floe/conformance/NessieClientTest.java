package floe.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.projectnessie.client.NessieClientBuilder;
import org.projectnessie.client.api.NessieApiV2;
import org.projectnessie.error.NessieBadRequestException;
import org.projectnessie.error.NessieContentNotFoundException;
import org.projectnessie.error.NessieNamespaceAlreadyExistsException;
import org.projectnessie.error.NessieNamespaceNotEmptyException;
import org.projectnessie.error.NessieNamespaceNotFoundException;
import org.projectnessie.error.NessieReferenceAlreadyExistsException;
import org.projectnessie.error.NessieReferenceConflictException;
import org.projectnessie.error.NessieReferenceNotFoundException;
import org.projectnessie.error.ReferenceConflicts;
import org.projectnessie.model.Branch;
import org.projectnessie.model.CommitConsistency;
import org.projectnessie.model.CommitMeta;
import org.projectnessie.model.CommitResponse;
import org.projectnessie.model.Conflict;
import org.projectnessie.model.Content;
import org.projectnessie.model.ContentKey;
import org.projectnessie.model.ContentResponse;
import org.projectnessie.model.DiffResponse;
import org.projectnessie.model.EntriesResponse;
import org.projectnessie.model.FetchOption;
import org.projectnessie.model.IcebergTable;
import org.projectnessie.model.IcebergView;
import org.projectnessie.model.LogResponse;
import org.projectnessie.model.MergeBehavior;
import org.projectnessie.model.MergeResponse;
import org.projectnessie.model.Namespace;
import org.projectnessie.model.NessieConfiguration;
import org.projectnessie.model.Operation;
import org.projectnessie.model.Reference;
import org.projectnessie.model.ReferenceHistoryResponse;
import org.projectnessie.model.Tag;

/**
 * Drives floe's Nessie API v2 with Nessie's own Java client. The server URI
 * (ending in /api/v2) comes from -Dfloe.uri or FLOE_NESSIE_URI. Every test
 * works on branches of its own, so tests do not depend on each other.
 */
class NessieClientTest {
  private static NessieApiV2 api;
  private static String warehouse;

  @BeforeAll
  static void connect() {
    String uri = System.getProperty("floe.uri", System.getenv("FLOE_NESSIE_URI"));
    assertNotNull(uri, "set -Dfloe.uri=http://host:port/api/v2 or FLOE_NESSIE_URI");
    warehouse = System.getProperty("floe.warehouse", System.getenv("FLOE_WAREHOUSE"));
    assertNotNull(warehouse, "set -Dfloe.warehouse=file:///path (floe's --warehouse) or FLOE_WAREHOUSE");
    api = NessieClientBuilder.createClientBuilder(null, null).withUri(uri).build(NessieApiV2.class);
  }

  @AfterAll
  static void close() {
    if (api != null) {
      api.close();
    }
  }

  /** A metadata location inside floe's warehouse: floe refuses others. */
  private static String loc(String path) {
    return warehouse + "/" + path;
  }

  private static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static Branch main() throws Exception {
    return (Branch) api.getReference().refName("main").get();
  }

  /** A new branch from main's head, holding namespace "db". */
  private static Branch branchWithNamespace(String name) throws Exception {
    Branch main = main();
    Branch b = (Branch) api.createReference().sourceRefName("main").reference(Branch.of(name, main.getHash())).create();
    String ns = unique("db");
    return api.commitMultipleOperations()
        .branch(b)
        .commitMeta(CommitMeta.fromMessage("create namespace"))
        .operation(Operation.Put.of(ContentKey.of(ns), Namespace.of(ns)))
        .commit();
  }

  private static String namespaceOf(Branch b) throws Exception {
    return api.getEntries().reference(b).get().getEntries().stream()
        .filter(e -> e.getType().equals(Content.Type.NAMESPACE))
        .map(e -> e.getName().getElements().get(0))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void config() {
    NessieConfiguration c = api.getConfig();
    assertEquals("main", c.getDefaultBranch());
    assertEquals(2, c.getMaxSupportedApiVersion());
    assertEquals("2.2.0", c.getSpecVersion());
    assertEquals(64, c.getNoAncestorHash().length());
  }

  @Test
  void referenceHistory() throws Exception {
    Branch b = branchWithNamespace(unique("history"));
    ReferenceHistoryResponse h = api.referenceHistory().refName(b.getName()).headCommitsToScan(5).get();
    assertEquals(b.getHash(), h.current().commitHash());
    assertEquals(CommitConsistency.COMMIT_CONSISTENT, h.current().commitConsistency());
    assertEquals(1, h.previous().size());
    assertEquals(main().getHash().length(), h.previous().get(0).commitHash().length());
  }

  @Test
  void createBranchAndTag() throws Exception {
    Branch main = main();
    String bn = unique("feature/x");
    Reference b = api.createReference().sourceRefName("main").reference(Branch.of(bn, main.getHash())).create();
    assertEquals(bn, b.getName());
    assertEquals(main.getHash(), b.getHash());
    String tn = unique("v1");
    Reference t = api.createReference().sourceRefName(bn).reference(Tag.of(tn, main.getHash())).create();
    assertInstanceOf(Tag.class, t);
    assertEquals(bn, api.getReference().refName(bn).get().getName());
    List<String> names = api.getAllReferences().get().getReferences().stream().map(Reference::getName).collect(Collectors.toList());
    assertTrue(names.contains(bn) && names.contains(tn) && names.contains("main"), names.toString());
    assertThrows(NessieReferenceAlreadyExistsException.class,
        () -> api.createReference().sourceRefName("main").reference(Branch.of(bn, main.getHash())).create());
    assertThrows(NessieReferenceNotFoundException.class, () -> api.getReference().refName(unique("missing")).get());
    // fetch=ALL carries metadata against the default branch.
    Reference withMeta = api.getReference().refName(bn).fetch(FetchOption.ALL).get();
    assertNotNull(withMeta.getMetadata());
    assertEquals(0, withMeta.getMetadata().getNumCommitsAhead());
  }

  @Test
  void commitReadEntriesAndContents() throws Exception {
    Branch b = branchWithNamespace(unique("commit"));
    String ns = namespaceOf(b);
    ContentKey key = ContentKey.of(ns, "orders");
    ContentKey dotted = ContentKey.of(ns, "odd.name/with%chars");
    CommitResponse resp = api.commitMultipleOperations()
        .branch(b)
        .commitMeta(CommitMeta.builder().message("add tables").author("alice").build())
        .operation(Operation.Put.of(key, IcebergTable.of(loc("w/orders/metadata/v1.json"), 7, 1, 2, 3)))
        .operation(Operation.Put.of(dotted, IcebergTable.of(loc("w/odd/metadata/v1.json"), 1, 0, 0, 0)))
        .commitWithResponse();
    Branch head = resp.getTargetBranch();
    Map<ContentKey, String> added = resp.toAddedContentsMap();
    assertEquals(2, added.size());

    EntriesResponse entries = api.getEntries().reference(head).withContent(true).get();
    assertEquals(3, entries.getEntries().size());
    EntriesResponse.Entry orders = entries.getEntries().stream().filter(e -> e.getName().equals(key)).findFirst().orElseThrow();
    assertEquals(Content.Type.ICEBERG_TABLE, orders.getType());
    assertEquals(added.get(key), orders.getContentId());
    IcebergTable t = (IcebergTable) orders.getContent();
    assertEquals(loc("w/orders/metadata/v1.json"), t.getMetadataLocation());
    assertEquals(7, t.getSnapshotId());
    assertEquals(3, t.getSortOrderId());

    Map<ContentKey, Content> contents = api.getContent().reference(head).key(key).key(dotted).key(ContentKey.of(ns, "missing")).get();
    assertEquals(2, contents.size());
    assertEquals(added.get(dotted), contents.get(dotted).getId());
    ContentResponse single = api.getContent().reference(head).getSingle(dotted);
    assertEquals(added.get(dotted), single.getContent().getId());
    assertThrows(NessieContentNotFoundException.class, () -> api.getContent().reference(head).getSingle(ContentKey.of(ns, "missing")));

    // A view: floe keeps its metadata location, version id and schema id.
    ContentKey viewKey = ContentKey.of(ns, "v");
    Branch withView = api.commitMultipleOperations()
        .branch(head)
        .commitMeta(CommitMeta.fromMessage("view"))
        .operation(Operation.Put.of(viewKey, IcebergView.of(loc("w/v/metadata/v1.json"), 4, 2)))
        .commit();
    IcebergView view = (IcebergView) api.getContent().reference(withView).getSingle(viewKey).getContent();
    assertEquals(loc("w/v/metadata/v1.json"), view.getMetadataLocation());
    assertEquals(4, view.getVersionId());
    assertEquals(2, view.getSchemaId());
    assertNotNull(view.getId());

    // An update carries the content id; a put without it is a conflict.
    Branch head2 = api.commitMultipleOperations()
        .branch(withView)
        .commitMeta(CommitMeta.fromMessage("update"))
        .operation(Operation.Put.of(key, IcebergTable.of(loc("w/orders/metadata/v2.json"), 8, 1, 2, 3, added.get(key))))
        .commit();
    NessieReferenceConflictException e = assertThrows(NessieReferenceConflictException.class,
        () -> api.commitMultipleOperations()
            .branch(head2)
            .commitMeta(CommitMeta.fromMessage("no id"))
            .operation(Operation.Put.of(key, IcebergTable.of(loc("w/orders/metadata/v3.json"), 9, 1, 2, 3)))
            .commit());
    assertEquals(Conflict.ConflictType.KEY_EXISTS, e.getErrorDetails().conflicts().get(0).conflictType());
    // A table in a namespace that does not exist.
    NessieReferenceConflictException noNs = assertThrows(NessieReferenceConflictException.class,
        () -> api.commitMultipleOperations()
            .branch(head2)
            .commitMeta(CommitMeta.fromMessage("orphan"))
            .operation(Operation.Put.of(ContentKey.of(unique("nons"), "t"), IcebergTable.of(loc("x.json"), 1, 0, 0, 0)))
            .commit());
    assertEquals(Conflict.ConflictType.NAMESPACE_ABSENT, noNs.getErrorDetails().conflicts().get(0).conflictType());
  }

  @Test
  void logWithOperations() throws Exception {
    Branch b = branchWithNamespace(unique("log"));
    String ns = namespaceOf(b);
    Branch head = api.commitMultipleOperations()
        .branch(b)
        .commitMeta(CommitMeta.fromMessage("second"))
        .operation(Operation.Put.of(ContentKey.of(ns, "t"), IcebergTable.of(loc("t.json"), 1, 0, 0, 0)))
        .commit();
    LogResponse log = api.getCommitLog().reference(head).fetch(FetchOption.ALL).maxRecords(1).get();
    LogResponse.LogEntry newest = log.getLogEntries().get(0);
    assertEquals("second", newest.getCommitMeta().getMessage());
    assertEquals("anonymous", newest.getCommitMeta().getCommitter());
    assertEquals(head.getHash(), newest.getCommitMeta().getHash());
    assertEquals(b.getHash(), newest.getParentCommitHash());
    assertEquals(1, newest.getOperations().size());
    Operation op = newest.getOperations().get(0);
    assertInstanceOf(Operation.Put.class, op);
    assertEquals(ContentKey.of(ns, "t"), op.getKey());
    // Paging through the whole log with the client's stream.
    long all = api.getCommitLog().reference(head).maxRecords(1).stream().count();
    assertTrue(all >= 2, "log has " + all + " commits");
  }

  @Test
  void diff() throws Exception {
    Branch b = branchWithNamespace(unique("diff"));
    String ns = namespaceOf(b);
    Branch head = api.commitMultipleOperations()
        .branch(b)
        .commitMeta(CommitMeta.fromMessage("t"))
        .operation(Operation.Put.of(ContentKey.of(ns, "t"), IcebergTable.of(loc("t.json"), 1, 0, 0, 0)))
        .commit();
    DiffResponse d = api.getDiff().fromRef(b).toRef(head).get();
    assertEquals(1, d.getDiffs().size());
    assertEquals(ContentKey.of(ns, "t"), d.getDiffs().get(0).getKey());
    assertNull(d.getDiffs().get(0).getFrom());
    assertNotNull(d.getDiffs().get(0).getTo());
  }

  @Test
  void mergeWithoutAndWithConflicts() throws Exception {
    Branch target = branchWithNamespace(unique("target"));
    String ns = namespaceOf(target);
    ContentKey key = ContentKey.of(ns, "t");
    CommitResponse created = api.commitMultipleOperations()
        .branch(target)
        .commitMeta(CommitMeta.fromMessage("create t"))
        .operation(Operation.Put.of(key, IcebergTable.of(loc("t1.json"), 1, 0, 0, 0)))
        .commitWithResponse();
    target = created.getTargetBranch();
    String id = created.toAddedContentsMap().get(key);
    Branch source = (Branch) api.createReference().sourceRefName(target.getName()).reference(Branch.of(unique("source"), target.getHash())).create();
    source = api.commitMultipleOperations()
        .branch(source)
        .commitMeta(CommitMeta.fromMessage("source change"))
        .operation(Operation.Put.of(key, IcebergTable.of(loc("t2.json"), 2, 0, 0, 0, id)))
        .operation(Operation.Put.of(ContentKey.of(ns, "u"), IcebergTable.of(loc("u1.json"), 1, 0, 0, 0)))
        .commit();

    // Dry run: successful, nothing applied.
    MergeResponse dry = api.mergeRefIntoBranch().branch(target).fromRef(source).dryRun(true).merge();
    assertTrue(dry.wasSuccessful());
    assertFalse(dry.wasApplied());
    assertEquals(target.getHash(), main(target.getName()).getHash());

    // Clean merge.
    MergeResponse ok = api.mergeRefIntoBranch().branch(target).fromRef(source).merge();
    assertTrue(ok.wasApplied());
    assertTrue(ok.wasSuccessful());
    assertEquals(target.getHash(), ok.getCommonAncestor());
    target = (Branch) main(target.getName());
    assertEquals(ok.getResultantTargetHash(), target.getHash());
    assertEquals(loc("t2.json"),
        ((IcebergTable) api.getContent().reference(target).getSingle(key).getContent()).getMetadataLocation());

    // Both sides change t: conflict with details.
    source = api.commitMultipleOperations()
        .branch(source)
        .commitMeta(CommitMeta.fromMessage("source again"))
        .operation(Operation.Put.of(key, IcebergTable.of(loc("t3.json"), 3, 0, 0, 0, id)))
        .commit();
    target = api.commitMultipleOperations()
        .branch(target)
        .commitMeta(CommitMeta.fromMessage("target change"))
        .operation(Operation.Put.of(key, IcebergTable.of(loc("t4.json"), 4, 0, 0, 0, id)))
        .commit();
    Branch t = target;
    Branch s = source;
    NessieReferenceConflictException e = assertThrows(NessieReferenceConflictException.class,
        () -> api.mergeRefIntoBranch().branch(t).fromRef(s).merge());
    ReferenceConflicts rc = e.getErrorDetails();
    assertNotNull(rc);
    assertEquals(1, rc.conflicts().size());
    assertEquals(Conflict.ConflictType.VALUE_DIFFERS, rc.conflicts().get(0).conflictType());
    assertEquals(key, rc.conflicts().get(0).key());

    // Conflict as a result.
    MergeResponse asResult = api.mergeRefIntoBranch().branch(t).fromRef(s).returnConflictAsResult(true).merge();
    assertFalse(asResult.wasSuccessful());
    assertFalse(asResult.wasApplied());
    MergeResponse.ContentKeyDetails detail = asResult.getDetails().stream().filter(d -> d.getKey().equals(key)).findFirst().orElseThrow();
    assertNotNull(detail.getConflict());
    assertEquals(Conflict.ConflictType.VALUE_DIFFERS, detail.getConflict().conflictType());

    // FORCE for the key resolves it.
    MergeResponse forced = api.mergeRefIntoBranch().branch(t).fromRef(s).mergeMode(key, MergeBehavior.FORCE).merge();
    assertTrue(forced.wasApplied());
    assertEquals(loc("t3.json"),
        ((IcebergTable) api.getContent().refName(t.getName()).getSingle(key).getContent()).getMetadataLocation());
  }

  @Test
  void filtersAndRelativeReferences() throws Exception {
    Branch b = branchWithNamespace(unique("filters"));
    String ns = namespaceOf(b);
    Branch head = api.commitMultipleOperations()
        .branch(b)
        .commitMeta(CommitMeta.fromMessage("tables"))
        .operation(Operation.Put.of(ContentKey.of(ns, "t1"), IcebergTable.of(loc("t1.json"), 1, 0, 0, 0)))
        .operation(Operation.Put.of(ContentKey.of(ns, "t2"), IcebergTable.of(loc("t2.json"), 1, 0, 0, 0)))
        .commit();
    EntriesResponse tables = api.getEntries().reference(head).filter("entry.contentType == 'ICEBERG_TABLE' && entry.namespace == '" + ns + "'").get();
    assertEquals(2, tables.getEntries().size());
    List<Reference> found = api.getAllReferences().filter("ref.name == '" + b.getName() + "' && refType == 'BRANCH'").get().getReferences();
    assertEquals(1, found.size());
    assertEquals(head.getHash(), found.get(0).getHash());
    // The branch one commit back has only the namespace.
    EntriesResponse before = api.getEntries().refName(b.getName()).hashOnRef("~1").get();
    assertEquals(1, before.getEntries().size());
    assertEquals(b.getHash(), before.getEffectiveReference().getHash());
  }

  private static Reference main(String name) throws Exception {
    return api.getReference().refName(name).get();
  }

  @Test
  void transplant() throws Exception {
    Branch target = branchWithNamespace(unique("tp-target"));
    String ns = namespaceOf(target);
    Branch source = (Branch) api.createReference().sourceRefName(target.getName()).reference(Branch.of(unique("tp-source"), target.getHash())).create();
    Branch s1 = api.commitMultipleOperations()
        .branch(source)
        .commitMeta(CommitMeta.fromMessage("one"))
        .operation(Operation.Put.of(ContentKey.of(ns, "a"), IcebergTable.of(loc("a.json"), 1, 0, 0, 0)))
        .commit();
    Branch s2 = api.commitMultipleOperations()
        .branch(s1)
        .commitMeta(CommitMeta.fromMessage("two"))
        .operation(Operation.Put.of(ContentKey.of(ns, "b"), IcebergTable.of(loc("b.json"), 1, 0, 0, 0)))
        .commit();
    MergeResponse r = api.transplantCommitsIntoBranch()
        .branch(target)
        .fromRefName(source.getName())
        .hashesToTransplant(List.of(s1.getHash(), s2.getHash()))
        .transplant();
    assertTrue(r.wasApplied());
    assertTrue(r.wasSuccessful());
    List<String> messages = api.getCommitLog().refName(target.getName()).get().getLogEntries().stream()
        .map(e -> e.getCommitMeta().getMessage()).collect(Collectors.toList());
    assertEquals(List.of("two", "one", "create namespace"), messages.subList(0, 3));
  }

  @Test
  void assignAndDelete() throws Exception {
    Branch b = branchWithNamespace(unique("assign"));
    Branch main = main();
    String tn = unique("tag");
    Tag tag = (Tag) api.createReference().sourceRefName(b.getName()).reference(Tag.of(tn, b.getHash())).create();
    // Move the tag back to main's head, then the branch too.
    api.assignTag().tag(tag).assignTo(main).assign();
    assertEquals(main.getHash(), api.getReference().refName(tn).get().getHash());
    api.assignBranch().branch(b).assignTo(main).assign();
    Branch moved = (Branch) api.getReference().refName(b.getName()).get();
    assertEquals(main.getHash(), moved.getHash());
    // A stale expected hash is a conflict.
    assertThrows(NessieReferenceConflictException.class, () -> api.deleteBranch().branch(b).delete());
    api.deleteBranch().branch(moved).delete();
    api.deleteTag().tag(Tag.of(tn, main.getHash())).delete();
    assertThrows(NessieReferenceNotFoundException.class, () -> api.getReference().refName(b.getName()).get());
    assertThrows(NessieReferenceNotFoundException.class, () -> api.getReference().refName(tn).get());
    assertThrows(NessieBadRequestException.class, () -> api.deleteBranch().branch(main()).delete());
  }

  @Test
  void namespacesThroughTheClient() throws Exception {
    Branch b = (Branch) api.createReference().sourceRefName("main").reference(Branch.of(unique("ns"), main().getHash())).create();
    String ns = unique("space");
    Namespace created = api.createNamespace().refName(b.getName()).namespace(Namespace.of(ns)).properties(Map.of("owner", "floe")).create();
    assertEquals(List.of(ns), created.getElements());
    Namespace got = api.getNamespace().refName(b.getName()).namespace(Namespace.of(ns)).get();
    assertEquals("floe", got.getProperties().get("owner"));
    assertNotNull(got.getId());
    // The client's namespace errors come from floe's conflicts and lookups.
    assertThrows(NessieNamespaceAlreadyExistsException.class,
        () -> api.createNamespace().refName(b.getName()).namespace(Namespace.of(ns)).create());
    Branch head = (Branch) api.getReference().refName(b.getName()).get();
    api.commitMultipleOperations()
        .branch(head)
        .commitMeta(CommitMeta.fromMessage("table in namespace"))
        .operation(Operation.Put.of(ContentKey.of(ns, "t"), IcebergTable.of(loc("t.json"), 1, 0, 0, 0)))
        .commit();
    assertThrows(NessieNamespaceNotEmptyException.class,
        () -> api.deleteNamespace().refName(b.getName()).namespace(Namespace.of(ns)).delete());
    assertThrows(NessieNamespaceNotFoundException.class,
        () -> api.getNamespace().refName(b.getName()).namespace(Namespace.of(unique("none"))).get());
  }
}
