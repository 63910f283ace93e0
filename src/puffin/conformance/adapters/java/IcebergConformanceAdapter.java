// A conformance adapter that runs Iceberg Java itself (the Spark runtime jar of Iceberg 1.10.2):
// its Puffin reader and writer (org.apache.iceberg.puffin), its deletion-vector reader and
// writer (PositionDeleteIndex, BitmapPositionDeleteIndex, RoaringPositionBitmap) and its generic
// table reader (IcebergGenerics over a metadata file, for the table tier), speaking the
// JSON-lines protocol of docs/conformance.md. Package-private classes are reached by reflection,
// as Iceberg's own readers call them. Compiled at run time (puffin.conformance.adapters._java).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.puffin.Blob;
import org.apache.iceberg.puffin.BlobMetadata;
import org.apache.iceberg.puffin.FileMetadata;
import org.apache.iceberg.puffin.Puffin;
import org.apache.iceberg.puffin.PuffinCompressionCodec;
import org.apache.iceberg.puffin.PuffinReader;
import org.apache.iceberg.puffin.PuffinWriter;
import org.apache.iceberg.util.Pair;

public class IcebergConformanceAdapter {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String DV = "deletion-vector-v1";

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    String line;
    while ((line = in.readLine()) != null) {
      JsonNode request = JSON.readTree(line);
      ObjectNode response = JSON.createObjectNode();
      try {
        response.set("result", handle(request));
        response.put("ok", true);
      } catch (Throwable e) { // any rejection, RuntimeExceptions and OutOfMemoryError included
        response.put("ok", false);
        response.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
      }
      out.println(JSON.writeValueAsString(response));
    }
  }

  static JsonNode handle(JsonNode request) throws Exception {
    String op = request.get("op").asText();
    switch (op) {
      case "hello": {
        ObjectNode hello = JSON.createObjectNode();
        hello.put("name",
            "Iceberg Java 1.10.2 (org.apache.iceberg.puffin, PositionDeleteIndex, IcebergGenerics)");
        ArrayNode ops = hello.putArray("ops");
        for (String o : new String[] {
            "read-container", "read-dv", "read-dvs", "read-bitmap", "write-container", "write-dv",
            "scan-table"}) {
          ops.add(o);
        }
        return hello;
      }
      case "read-container":
        return readContainer(request.get("path").asText());
      case "read-dv":
        return readDv(request);
      case "read-dvs":
        return readDvs(request.get("path").asText());
      case "read-bitmap":
        return readBitmap(request.get("path").asText());
      case "write-container":
        return writeContainer(request);
      case "write-dv":
        return writeDv(request);
      case "scan-table":
        return scanTable(request);
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  // -- tables: Iceberg Java's generic reader (IcebergGenerics), deletes applied by its own
  // DeleteFileIndex and delete loader, over the table's metadata file as it stands -------

  static ObjectNode scanTable(JsonNode request) throws Exception {
    org.apache.iceberg.io.FileIO io =
        new org.apache.iceberg.hadoop.HadoopFileIO(new org.apache.hadoop.conf.Configuration());
    org.apache.iceberg.Table table = new org.apache.iceberg.BaseTable(
        new org.apache.iceberg.StaticTableOperations(request.get("metadata").asText(), io),
        "conformance");
    List<String> columns = new ArrayList<>();
    for (JsonNode column : request.get("columns")) {
      columns.add(column.asText());
    }
    ObjectNode node = JSON.createObjectNode();
    ArrayNode rows = node.putArray("rows");
    try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> records =
        org.apache.iceberg.data.IcebergGenerics.read(table).build()) {
      for (org.apache.iceberg.data.Record record : records) {
        ArrayNode row = rows.addArray();
        for (String column : columns) {
          Object value = record.getField(column);
          if (value == null) {
            row.addNull();
          } else if (value instanceof Long) {
            row.add((Long) value);
          } else if (value instanceof Integer) {
            row.add((Integer) value);
          } else {
            row.add(value.toString());
          }
        }
      }
    }
    return node;
  }

  static String sha256(ByteBuffer data) throws Exception {
    MessageDigest digest = MessageDigest.getInstance("SHA-256");
    digest.update(data.duplicate());
    return HexFormat.of().formatHex(digest.digest());
  }

  // -- containers ------------------------------------------------------------------------------

  static ObjectNode readContainer(String path) throws Exception {
    ObjectNode node = JSON.createObjectNode();
    try (PuffinReader reader = Puffin.read(org.apache.iceberg.Files.localInput(path)).build()) {
      FileMetadata metadata = reader.fileMetadata();
      node.set("properties", JSON.valueToTree(metadata.properties()));
      // readAll returns the blobs in file order; the protocol lists them in footer order.
      Map<BlobMetadata, ByteBuffer> data = new java.util.IdentityHashMap<>();
      for (Pair<BlobMetadata, ByteBuffer> pair : reader.readAll(metadata.blobs())) {
        data.put(pair.first(), pair.second());
      }
      ArrayNode blobs = node.putArray("blobs");
      for (BlobMetadata blob : metadata.blobs()) {
        ByteBuffer bytes = data.get(blob);
        ObjectNode b = blobs.addObject();
        b.put("type", blob.type());
        b.set("fields", JSON.valueToTree(blob.inputFields()));
        b.put("snapshot-id", blob.snapshotId());
        b.put("sequence-number", blob.sequenceNumber());
        b.put("offset", blob.offset());
        b.put("length", blob.length());
        b.put("compression-codec", blob.compressionCodec());
        b.set("properties", JSON.valueToTree(blob.properties()));
        b.put("size", bytes.remaining());
        b.put("sha256", sha256(bytes));
      }
    }
    return node;
  }

  static ObjectNode writeContainer(JsonNode request) throws Exception {
    File file = File.createTempFile("iceberg-java-", ".puffin");
    file.delete(); // Iceberg's local output refuses an existing file
    try {
      Puffin.WriteBuilder builder = Puffin.write(org.apache.iceberg.Files.localOutput(file));
      request.get("properties").fields().forEachRemaining(e -> builder.set(e.getKey(), e.getValue().asText()));
      if (request.path("compress-footer").asBoolean(false)) {
        builder.compressFooter();
      }
      try (PuffinWriter writer = builder.build()) {
        for (JsonNode blob : request.get("blobs")) {
          writer.add(toBlob(blob));
        }
      }
      byte[] bytes = Files.readAllBytes(file.toPath());
      ObjectNode node = JSON.createObjectNode();
      node.put("size", bytes.length);
      node.put("sha256", sha256(ByteBuffer.wrap(bytes)));
      return node;
    } finally {
      file.delete();
    }
  }

  static Blob toBlob(JsonNode blob) {
    List<Integer> fields = new ArrayList<>();
    blob.get("fields").forEach(f -> fields.add(f.asInt()));
    Map<String, String> properties = new HashMap<>();
    blob.path("properties").fields().forEachRemaining(e -> properties.put(e.getKey(), e.getValue().asText()));
    JsonNode codec = blob.get("compression-codec");
    PuffinCompressionCodec compression = codec == null || codec.isNull()
        ? PuffinCompressionCodec.NONE : PuffinCompressionCodec.forName(codec.asText());
    return new Blob(blob.get("type").asText(), fields, blob.get("snapshot-id").asLong(),
        blob.get("sequence-number").asLong(),
        ByteBuffer.wrap(HexFormat.of().parseHex(blob.get("data-hex").asText())), compression, properties);
  }

  // -- deletion vectors ------------------------------------------------------------------------

  static DeleteFile deleteFile(String path, long offset, long length, long count) throws Exception {
    return org.apache.iceberg.FileMetadata.deleteFileBuilder(PartitionSpec.unpartitioned())
        .ofPositionDeletes().withFormat(FileFormat.PUFFIN).withPath(path)
        .withFileSizeInBytes(Files.size(Paths.get(path))).withRecordCount(count)
        .withContentOffset(offset).withContentSizeInBytes(length)
        .withReferencedDataFile("data.parquet").build();
  }

  static ObjectNode positions(PositionDeleteIndex index) {
    ObjectNode node = JSON.createObjectNode();
    ArrayNode list = node.putArray("positions");
    index.forEach(list::add);
    node.put("count", index.cardinality());
    return node;
  }

  static ObjectNode readDv(JsonNode request) throws Exception {
    String path = request.get("path").asText();
    int offset = request.get("offset").asInt();
    int length = request.get("length").asInt();
    byte[] bytes = new byte[length];
    ByteBuffer.wrap(Files.readAllBytes(Paths.get(path)), offset, length).get(bytes);
    JsonNode given = request.get("record-count");
    long count = given == null || given.isNull() ? cardinality(bytes) : given.asLong();
    return positions(PositionDeleteIndex.deserialize(bytes, deleteFile(path, offset, length, count)));
  }

  /** The bitmap's cardinality, for a request without record-count (Java always has one). */
  static long cardinality(byte[] bytes) throws Exception {
    ByteBuffer data = ByteBuffer.wrap(bytes, 8, Math.max(0, bytes.length - 12)).slice();
    return (long) bitmapClass().getMethod("cardinality").invoke(deserializeBitmap(data));
  }

  static ObjectNode readDvs(String path) throws Exception {
    ObjectNode vectors = JSON.createObjectNode();
    try (PuffinReader reader = Puffin.read(org.apache.iceberg.Files.localInput(path)).build()) {
      for (BlobMetadata blob : reader.fileMetadata().blobs()) {
        if (!DV.equals(blob.type())) {
          continue;
        }
        // Java reads a DV by its manifest entry and never reads this property: "" if absent.
        String file = blob.properties().getOrDefault("referenced-data-file", "");
        long count = Long.parseLong(blob.properties().get("cardinality"));
        byte[] bytes = new byte[(int) blob.length()];
        ByteBuffer.wrap(Files.readAllBytes(Paths.get(path)), (int) blob.offset(), bytes.length).get(bytes);
        DeleteFile dv = deleteFile(path, blob.offset(), blob.length(), count);
        vectors.set(file, positions(PositionDeleteIndex.deserialize(bytes, dv)));
      }
    }
    ObjectNode node = JSON.createObjectNode();
    node.set("vectors", vectors);
    return node;
  }

  static Class<?> bitmapClass() throws Exception {
    return Class.forName("org.apache.iceberg.deletes.RoaringPositionBitmap");
  }

  static Object deserializeBitmap(ByteBuffer data) throws Exception {
    Method deserialize = bitmapClass().getMethod("deserialize", ByteBuffer.class);
    deserialize.setAccessible(true);
    try {
      return deserialize.invoke(null, data.order(ByteOrder.LITTLE_ENDIAN));
    } catch (java.lang.reflect.InvocationTargetException e) {
      throw (e.getCause() instanceof Exception) ? (Exception) e.getCause() : e;
    }
  }

  static ObjectNode readBitmap(String path) throws Exception {
    Object bitmap = deserializeBitmap(ByteBuffer.wrap(Files.readAllBytes(Paths.get(path))));
    ObjectNode node = JSON.createObjectNode();
    ArrayNode list = node.putArray("positions");
    Method forEach = bitmapClass().getMethod("forEach", java.util.function.LongConsumer.class);
    forEach.setAccessible(true);
    forEach.invoke(bitmap, (java.util.function.LongConsumer) list::add);
    Method cardinality = bitmapClass().getMethod("cardinality");
    cardinality.setAccessible(true);
    node.put("count", (long) cardinality.invoke(bitmap));
    return node;
  }

  static ObjectNode writeDv(JsonNode request) throws Exception {
    Class<?> type = Class.forName("org.apache.iceberg.deletes.BitmapPositionDeleteIndex");
    Constructor<?> make = type.getDeclaredConstructor();
    make.setAccessible(true);
    PositionDeleteIndex index = (PositionDeleteIndex) make.newInstance();
    for (JsonNode range : request.get("ranges")) {
      long start = range.get(0).asLong();
      long stop = range.get(1).asLong();
      long step = range.size() > 2 ? range.get(2).asLong() : 1;
      if (step == 1) {
        index.delete(start, stop);
      } else {
        for (long p = start; p < stop; p += step) {
          index.delete(p);
        }
      }
    }
    ByteBuffer bytes = index.serialize();
    ObjectNode node = JSON.createObjectNode();
    node.put("size", bytes.remaining());
    node.put("sha256", sha256(bytes));
    return node;
  }
}
