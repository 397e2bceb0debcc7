package org.apache.iceberg.rest;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Starts Apache Iceberg's reference REST catalog server for floe's peer
 * benchmark (conformance/testkit/icebergpeers), bound to 127.0.0.1.
 *
 * <p>It builds the same server as {@link RESTCatalogServer#start(boolean)}:
 * a {@link JdbcCatalog} behind {@link RESTServerCatalogAdapter} and
 * {@link RESTCatalogServlet}. Only the listener differs: upstream's
 * {@code new Server(port)} binds every interface, this one binds loopback.
 * It lives in the server's package because the adapter and its context
 * are package-private. Upstream's gzip handler is left out: the benchmark
 * client never asks for compression.
 *
 * <p>Usage: {@code PeerBenchLauncher PORT WAREHOUSE JDBC_URI}, e.g. {@code
 * 8181 /tmp/wh jdbc:sqlite:/tmp/catalog.db}. It prints "listening
 * 127.0.0.1:PORT" once it serves.
 */
public final class PeerBenchLauncher {
  private PeerBenchLauncher() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: PeerBenchLauncher PORT WAREHOUSE JDBC_URI");
      System.exit(2);
    }
    int port = Integer.parseInt(args[0]);
    Map<String, String> props = new HashMap<>();
    props.put(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    props.put(CatalogProperties.URI, args[2]);
    props.put("jdbc.schema-version", "V1");
    props.put(CatalogProperties.WAREHOUSE_LOCATION, args[1]);
    Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, new Configuration());
    RESTCatalogServer.CatalogContext ctx = new RESTCatalogServer.CatalogContext(catalog, props);

    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTServerCatalogAdapter(ctx))), "/*");

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    System.out.println("listening 127.0.0.1:" + connector.getLocalPort());
    System.out.flush();
    server.join();
  }
}
