// An Iceberg REST catalog for tests: Iceberg Java 1.10.2's own server logic
// (org.apache.iceberg.rest.CatalogHandlers) behind the JDK's HttpServer on 127.0.0.1.
//
// Usage: java -cp BUILD:JARS RestCatalogServer WAREHOUSE [S3_LOCATION S3_ENDPOINT]
//
// The backing catalog is Iceberg Java's JdbcCatalog on WAREHOUSE/rest-catalog.db (SQLite),
// its tables under WAREHOUSE/<namespace>/<table>, written with HadoopFileIO; or, given
// S3_LOCATION (s3://bucket/prefix) and the tests' S3 server, under S3_LOCATION, written with
// PlainS3FileIO (beside this file). Every commit
// (POST /v1/namespaces/{ns}/tables/{t}) goes through CatalogHandlers.updateTable, so Java's
// TableMetadata builder checks the requirements and applies the updates; what it rejects
// comes back as the REST error response (ValidationException: 400, CommitFailedException:
// 409, ...), with the codes of Iceberg's test adapter RESTCatalogAdapter (which is not in
// the runtime jar).
//
// The server listens on an ephemeral port and prints "port N" on stdout once it does; each
// request is logged on stderr ("METHOD path -> status"). It stops when its stdin closes.

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.BadRequestException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NoSuchViewException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.UnprocessableEntityException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.CatalogHandlers;
import org.apache.iceberg.rest.RESTResponse;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

public class RestCatalogServer {
  /** The status of each exception, checked in order (subclasses before their parents). */
  private static final List<Map.Entry<Class<? extends Exception>, Integer>> CODES =
      List.of(
          Map.entry(NamespaceNotEmptyException.class, 409),
          Map.entry(ValidationException.class, 400),
          Map.entry(BadRequestException.class, 400),
          Map.entry(IllegalArgumentException.class, 400),
          Map.entry(NotAuthorizedException.class, 401),
          Map.entry(ForbiddenException.class, 403),
          Map.entry(NoSuchNamespaceException.class, 404),
          Map.entry(NoSuchTableException.class, 404),
          Map.entry(NoSuchViewException.class, 404),
          Map.entry(UnsupportedOperationException.class, 406),
          Map.entry(AlreadyExistsException.class, 409),
          Map.entry(CommitFailedException.class, 409),
          Map.entry(UnprocessableEntityException.class, 422),
          Map.entry(CommitStateUnknownException.class, 500));

  /**
   * What the config endpoint advertises: exactly the routes handled below. Written as strings:
   * the runtime jar's Endpoint class needs the shaded httpclient5 the jar does not contain.
   */
  private static final List<String> ENDPOINTS =
      List.of(
          "GET /v1/{prefix}/namespaces",
          "POST /v1/{prefix}/namespaces",
          "GET /v1/{prefix}/namespaces/{namespace}",
          "HEAD /v1/{prefix}/namespaces/{namespace}",
          "DELETE /v1/{prefix}/namespaces/{namespace}",
          "POST /v1/{prefix}/namespaces/{namespace}/properties",
          "GET /v1/{prefix}/namespaces/{namespace}/tables",
          "POST /v1/{prefix}/namespaces/{namespace}/tables",
          "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
          "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
          "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
          "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
          "POST /v1/{prefix}/namespaces/{namespace}/register",
          "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
          "POST /v1/{prefix}/tables/rename",
          "POST /v1/{prefix}/transactions/commit");

  private static final List<String> ROOTS =
      List.of("config", "namespaces", "tables", "transactions", "oauth");

  /** A response: status and body (null: no body). */
  private static final class Reply {
    final int status;
    final Object body;

    Reply(int status, Object body) {
      this.status = status;
      this.body = body;
    }
  }

  private final JdbcCatalog catalog;
  private final ObjectMapper mapper;

  RestCatalogServer(JdbcCatalog catalog, ObjectMapper mapper) {
    this.catalog = catalog;
    this.mapper = mapper;
  }

  /** Iceberg's own REST mapper (package-private RESTObjectMapper.mapper()). */
  private static ObjectMapper restMapper() throws Exception {
    Class<?> holder = Class.forName("org.apache.iceberg.rest.RESTObjectMapper");
    Method method = holder.getDeclaredMethod("mapper");
    method.setAccessible(true);
    return (ObjectMapper) method.invoke(null);
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1 && args.length != 3) {
      System.err.println("usage: RestCatalogServer WAREHOUSE [S3_LOCATION S3_ENDPOINT]");
      System.exit(2);
    }
    String warehouse = args[0].replaceAll("/+$", "");
    Map<String, String> properties = new HashMap<>();
    properties.put("uri", "jdbc:sqlite:" + warehouse + "/rest-catalog.db");
    properties.put("warehouse", warehouse);
    if (args.length == 3) { // tables on the tests' S3 server, the catalog database still local
      properties.put("warehouse", args[1].replaceAll("/+$", ""));
      properties.put("io-impl", "PlainS3FileIO");
      properties.put("s3.endpoint", args[2]);
    }
    properties.put("jdbc.schema-version", "V1");
    JdbcCatalog catalog = new JdbcCatalog();
    catalog.setConf(new Configuration());
    catalog.initialize("rest_backend", properties);

    RestCatalogServer handler = new RestCatalogServer(catalog, restMapper());
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", handler::handle);
    // One request at a time: the SQLite catalog and the commit order stay simple.
    server.setExecutor(Executors.newSingleThreadExecutor());
    server.start();
    System.out.println("port " + server.getAddress().getPort());
    System.out.flush();

    // Stop when stdin closes (the test harness closes it, or dies).
    InputStream in = System.in;
    byte[] buffer = new byte[256];
    while (in.read(buffer) >= 0) {
      // ignore input
    }
    server.stop(0);
    catalog.close();
    System.exit(0);
  }

  private void handle(HttpExchange exchange) throws IOException {
    String method = exchange.getRequestMethod();
    String path = exchange.getRequestURI().getRawPath();
    Reply reply;
    try {
      byte[] body = readAll(exchange.getRequestBody());
      reply = route(method, path, query(exchange.getRequestURI().getRawQuery()), body);
    } catch (Exception e) {
      reply = error(e);
    }
    byte[] out =
        reply.body == null
            ? null
            : mapper.writeValueAsString(reply.body).getBytes(StandardCharsets.UTF_8);
    System.err.println(method + " " + path + " -> " + reply.status);
    if (reply.status >= 400) {
      System.err.println("  " + new String(out, StandardCharsets.UTF_8).split("\"stack\"")[0]);
    }
    System.err.flush();
    if (out == null || "HEAD".equals(method)) {
      exchange.sendResponseHeaders(reply.status == 200 ? 204 : reply.status, -1);
    } else {
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(reply.status, out.length);
      try (OutputStream stream = exchange.getResponseBody()) {
        stream.write(out);
      }
    }
    exchange.close();
  }

  private static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    in.transferTo(buffer);
    return buffer.toByteArray();
  }

  private static Map<String, String> query(String raw) {
    Map<String, String> params = new LinkedHashMap<>();
    if (raw == null || raw.isEmpty()) {
      return params;
    }
    for (String pair : raw.split("&")) {
      int eq = pair.indexOf('=');
      String key = eq < 0 ? pair : pair.substring(0, eq);
      String value = eq < 0 ? "" : pair.substring(eq + 1);
      params.put(
          URLDecoder.decode(key, StandardCharsets.UTF_8),
          URLDecoder.decode(value, StandardCharsets.UTF_8));
    }
    return params;
  }

  private Reply error(Exception e) {
    int status = 500;
    for (Map.Entry<Class<? extends Exception>, Integer> entry : CODES) {
      if (entry.getKey().isInstance(e)) {
        status = entry.getValue();
        break;
      }
    }
    return new Reply(status, errorResponse(status, e.getClass().getSimpleName(), e.getMessage(), e));
  }

  private static ErrorResponse errorResponse(int status, String type, String message, Exception e) {
    ErrorResponse.Builder builder =
        ErrorResponse.builder().responseCode(status).withType(type).withMessage(message);
    if (e != null) {
      builder.withStackTrace(e);
    }
    return builder.build();
  }

  private <T> T parse(byte[] body, Class<T> type) throws IOException {
    return mapper.readValue(body, type);
  }

  private static Namespace namespace(String raw) {
    return RESTUtil.decodeNamespace(raw);
  }

  private static TableIdentifier table(String rawNamespace, String rawTable) {
    return TableIdentifier.of(namespace(rawNamespace), RESTUtil.decodeString(rawTable));
  }

  private static Reply ok(RESTResponse response) {
    return new Reply(200, response);
  }

  private static final Reply NO_CONTENT = new Reply(204, null);

  private Reply route(String method, String path, Map<String, String> params, byte[] body)
      throws IOException {
    List<String> parts = new ArrayList<>(Arrays.asList(path.replaceAll("^/+|/+$", "").split("/")));
    if (parts.isEmpty() || !"v1".equals(parts.get(0))) {
      return noRoute(method, path);
    }
    parts.remove(0);
    if (parts.size() > 1 && !ROOTS.contains(parts.get(0))) {
      parts.remove(0); // a catalog prefix: this server has one catalog
    }
    int n = parts.size();
    String root = n > 0 ? parts.get(0) : "";
    String key = method + " " + root + "/" + n;

    if ("GET config/1".equals(key)) {
      Map<String, Object> config = new LinkedHashMap<>();
      config.put("defaults", Map.of());
      config.put("overrides", Map.of());
      config.put("endpoints", ENDPOINTS);
      return new Reply(200, config);
    }
    if ("POST oauth/2".equals(key) && "tokens".equals(parts.get(1))) {
      return new Reply(
          400, errorResponse(400, "BadRequestException", "this test server has no OAuth", null));
    }
    if ("POST tables/2".equals(key) && "rename".equals(parts.get(1))) {
      CatalogHandlers.renameTable(catalog, parse(body, RenameTableRequest.class));
      return NO_CONTENT;
    }
    if ("POST transactions/2".equals(key) && "commit".equals(parts.get(1))) {
      commitTransaction(parse(body, CommitTransactionRequest.class));
      return NO_CONTENT;
    }
    if (!"namespaces".equals(root)) {
      return noRoute(method, path);
    }
    switch (key) {
      case "GET namespaces/1":
        {
          Namespace parent =
              params.containsKey("parent") ? namespace(params.get("parent")) : Namespace.empty();
          return ok(
              params.containsKey("pageSize")
                  ? CatalogHandlers.listNamespaces(
                      catalog, parent, params.get("pageToken"), params.get("pageSize"))
                  : CatalogHandlers.listNamespaces(catalog, parent));
        }
      case "POST namespaces/1":
        return ok(CatalogHandlers.createNamespace(catalog, parse(body, CreateNamespaceRequest.class)));
      case "GET namespaces/2":
        return ok(CatalogHandlers.loadNamespace(catalog, namespace(parts.get(1))));
      case "HEAD namespaces/2":
        CatalogHandlers.namespaceExists(catalog, namespace(parts.get(1)));
        return NO_CONTENT;
      case "DELETE namespaces/2":
        CatalogHandlers.dropNamespace(catalog, namespace(parts.get(1)));
        return NO_CONTENT;
      case "POST namespaces/3":
        if ("properties".equals(parts.get(2))) {
          return ok(
              CatalogHandlers.updateNamespaceProperties(
                  catalog,
                  namespace(parts.get(1)),
                  parse(body, UpdateNamespacePropertiesRequest.class)));
        }
        if ("register".equals(parts.get(2))) {
          return ok(
              CatalogHandlers.registerTable(
                  catalog, namespace(parts.get(1)), parse(body, RegisterTableRequest.class)));
        }
        if ("tables".equals(parts.get(2))) {
          CreateTableRequest request = parse(body, CreateTableRequest.class);
          request.validate();
          Namespace ns = namespace(parts.get(1));
          return ok(
              request.stageCreate()
                  ? CatalogHandlers.stageTableCreate(catalog, ns, request)
                  : CatalogHandlers.createTable(catalog, ns, request));
        }
        break;
      case "GET namespaces/3":
        if ("tables".equals(parts.get(2))) {
          Namespace ns = namespace(parts.get(1));
          return ok(
              params.containsKey("pageSize")
                  ? CatalogHandlers.listTables(
                      catalog, ns, params.get("pageToken"), params.get("pageSize"))
                  : CatalogHandlers.listTables(catalog, ns));
        }
        break;
      case "GET namespaces/4":
        if ("tables".equals(parts.get(2))) {
          return ok(CatalogHandlers.loadTable(catalog, table(parts.get(1), parts.get(3))));
        }
        break;
      case "HEAD namespaces/4":
        if ("tables".equals(parts.get(2))) {
          CatalogHandlers.tableExists(catalog, table(parts.get(1), parts.get(3)));
          return NO_CONTENT;
        }
        break;
      case "POST namespaces/4":
        if ("tables".equals(parts.get(2))) {
          UpdateTableRequest request = parse(body, UpdateTableRequest.class);
          return ok(
              CatalogHandlers.updateTable(catalog, table(parts.get(1), parts.get(3)), request));
        }
        break;
      case "DELETE namespaces/4":
        if ("tables".equals(parts.get(2))) {
          TableIdentifier ident = table(parts.get(1), parts.get(3));
          if ("true".equalsIgnoreCase(params.get("purgeRequested"))) {
            CatalogHandlers.purgeTable(catalog, ident);
          } else {
            CatalogHandlers.dropTable(catalog, ident);
          }
          return NO_CONTENT;
        }
        break;
      case "POST namespaces/5":
        if ("tables".equals(parts.get(2)) && "metrics".equals(parts.get(4))) {
          return NO_CONTENT; // metrics reports are accepted and dropped
        }
        break;
      default:
        break;
    }
    return noRoute(method, path);
  }

  private static Reply noRoute(String method, String path) {
    return new Reply(
        400,
        errorResponse(
            400, "BadRequestException", "No route for request: " + method + " " + path, null));
  }

  /**
   * Every table change validated against its own table first (CatalogHandlers applies each in
   * a transaction, in memory), then all committed: the atomicity a test needs, no more.
   */
  private void commitTransaction(CommitTransactionRequest request) {
    List<Transaction> transactions = new ArrayList<>();
    for (UpdateTableRequest change : request.tableChanges()) {
      Table loaded = catalog.loadTable(change.identifier());
      if (!(loaded instanceof BaseTable)) {
        throw new IllegalStateException("not a BaseTable: " + change.identifier());
      }
      Transaction transaction =
          Transactions.newTransaction(
              change.identifier().toString(), ((BaseTable) loaded).operations());
      BaseTransaction.TransactionTable staged =
          (BaseTransaction.TransactionTable) transaction.table();
      try {
        Method commit =
            CatalogHandlers.class.getDeclaredMethod(
                "commit", org.apache.iceberg.TableOperations.class, UpdateTableRequest.class);
        commit.setAccessible(true);
        commit.invoke(null, staged.operations(), change);
      } catch (java.lang.reflect.InvocationTargetException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException) {
          throw (RuntimeException) cause;
        }
        throw new IllegalStateException(cause);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(e);
      }
      transactions.add(transaction);
    }
    transactions.forEach(Transaction::commitTransaction);
  }
}
