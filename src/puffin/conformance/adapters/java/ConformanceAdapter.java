// A conformance adapter on the JVM: datasketches-java for theta sketches and RoaringBitmap
// for deletion vectors (the DV logic ported from Iceberg Java's RoaringPositionBitmap and
// BitmapPositionDeleteIndex), speaking the JSON-lines protocol of docs/conformance.md.
// Compiled at run time against pyspark's jars; it is also an example adapter in Java.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32;
import org.apache.datasketches.memory.Memory;
import org.apache.datasketches.theta.CompactSketch;
import org.apache.datasketches.theta.HashIterator;
import org.apache.datasketches.theta.SetOperation;
import org.apache.datasketches.theta.Sketch;
import org.apache.datasketches.theta.Union;
import org.apache.datasketches.theta.UpdateSketch;
import org.roaringbitmap.RoaringBitmap;

public class ConformanceAdapter {
  static final ObjectMapper JSON = new ObjectMapper();
  static final int MAGIC = 0x6439D3D1; // D1 D3 39 64 read little-endian
  static final int MAX_KEY = Integer.MAX_VALUE - 1;

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    String line;
    while ((line = in.readLine()) != null) {
      JsonNode request = JSON.readTree(line);
      ObjectNode response = JSON.createObjectNode();
      try {
        JsonNode result = handle(request);
        response.put("ok", true);
        response.set("result", result);
      } catch (Throwable e) { // any rejection, including RuntimeExceptions of the libraries
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
        hello.put("name", "java (datasketches-java, RoaringBitmap)");
        ArrayNode ops = hello.putArray("ops");
        for (String o : new String[] {"read-theta", "build-theta", "read-dv", "read-bitmap", "write-dv"}) {
          ops.add(o);
        }
        return hello;
      }
      case "read-theta":
        return describe(Sketch.heapify(Memory.wrap(read(request))));
      case "build-theta":
        return build(request);
      case "read-dv":
        return readDv(request);
      case "read-bitmap":
        return positions(deserialize(ByteBuffer.wrap(read(request))));
      case "write-dv":
        return writeDv(request);
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  static byte[] read(JsonNode request) throws Exception {
    return Files.readAllBytes(Paths.get(request.get("path").asText()));
  }

  // -- theta ---------------------------------------------------------------------------------

  static ObjectNode describe(Sketch sketch) throws Exception {
    List<Long> hashes = new ArrayList<>();
    HashIterator it = sketch.iterator();
    while (it.next()) {
      hashes.add(it.get());
    }
    hashes.sort(null);
    MessageDigest digest = MessageDigest.getInstance("SHA-256");
    ByteBuffer buf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
    for (long h : hashes) {
      buf.clear();
      digest.update(buf.putLong(h).array());
    }
    ObjectNode node = JSON.createObjectNode();
    node.put("empty", sketch.isEmpty());
    node.put("num-retained", sketch.getRetainedEntries(true));
    node.put("theta64", sketch.getThetaLong());
    node.put("estimate", sketch.getEstimate());
    node.put("hashes-sha256", HexFormat.of().formatHex(digest.digest()));
    return node;
  }

  static ObjectNode build(JsonNode request) throws Exception {
    int k = 1 << request.get("lg-k").asInt();
    UpdateSketch sketch = UpdateSketch.builder().setNominalEntries(k).build();
    for (JsonNode value : request.get("single-values")) {
      sketch.update(HexFormat.of().parseHex(value.asText()));
    }
    Union union = SetOperation.builder().setNominalEntries(k).buildUnion();
    union.union(sketch);
    CompactSketch result = union.getResult();
    ObjectNode node = JSON.createObjectNode();
    node.set("sketch", describe(result));
    return node;
  }

  // -- deletion vectors (Iceberg Java's rules) ----------------------------------------------

  static ObjectNode readDv(JsonNode request) throws Exception {
    byte[] file = read(request);
    int offset = request.get("offset").asInt();
    int length = request.get("length").asInt();
    byte[] bytes = Arrays.copyOfRange(file, offset, offset + length);
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    int bitmapDataLength = buffer.getInt();
    if (bitmapDataLength != length - 8) {
      throw new IllegalArgumentException("Invalid bitmap data length: " + bitmapDataLength);
    }
    ByteBuffer data = ByteBuffer.wrap(bytes, 4, bitmapDataLength).order(ByteOrder.LITTLE_ENDIAN);
    if (data.getInt() != MAGIC) {
      throw new IllegalArgumentException("Invalid magic number");
    }
    List<RoaringBitmap> bitmaps = deserialize(data.slice().order(ByteOrder.LITTLE_ENDIAN));
    CRC32 crc = new CRC32();
    crc.update(bytes, 4, bitmapDataLength);
    if ((int) crc.getValue() != buffer.getInt(4 + bitmapDataLength)) {
      throw new IllegalArgumentException("Invalid CRC");
    }
    ObjectNode node = positions(bitmaps);
    JsonNode recordCount = request.get("record-count");
    if (recordCount != null && !recordCount.isNull()
        && node.get("count").asLong() != recordCount.asLong()) {
      throw new IllegalArgumentException("Invalid cardinality: " + node.get("count"));
    }
    return node;
  }

  static List<RoaringBitmap> deserialize(ByteBuffer buffer) throws Exception {
    ByteBuffer le = buffer.order(ByteOrder.LITTLE_ENDIAN);
    long count = le.getLong();
    if (count < 0 || count > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("Invalid bitmap count: " + count);
    }
    List<RoaringBitmap> bitmaps = new ArrayList<>();
    int lastKey = -1;
    for (long i = 0; i < count; i++) {
      int key = le.getInt();
      if (key < 0 || key > MAX_KEY || key <= lastKey) {
        throw new IllegalArgumentException("Invalid key: " + Integer.toUnsignedString(key));
      }
      while (bitmaps.size() < key) {
        bitmaps.add(new RoaringBitmap());
      }
      RoaringBitmap bitmap = new RoaringBitmap();
      bitmap.deserialize(le);
      le.position(le.position() + bitmap.serializedSizeInBytes());
      bitmaps.add(bitmap);
      lastKey = key;
    }
    return bitmaps;
  }

  static ObjectNode positions(List<RoaringBitmap> bitmaps) {
    ObjectNode node = JSON.createObjectNode();
    ArrayNode list = node.putArray("positions");
    long count = 0;
    for (int key = 0; key < bitmaps.size(); key++) {
      for (int low : bitmaps.get(key)) {
        list.add(((long) key << 32) | Integer.toUnsignedLong(low));
        count++;
      }
    }
    node.put("count", count);
    return node;
  }

  static ObjectNode writeDv(JsonNode request) throws Exception {
    List<RoaringBitmap> bitmaps = new ArrayList<>();
    for (JsonNode range : request.get("ranges")) {
      long start = range.get(0).asLong();
      long stop = range.get(1).asLong();
      long step = range.size() > 2 ? range.get(2).asLong() : 1;
      for (long p = start; p < stop; p += step) {
        int key = (int) (p >>> 32);
        while (bitmaps.size() <= key) {
          bitmaps.add(new RoaringBitmap());
        }
        bitmaps.get(key).add((int) p);
      }
    }
    int size = 8;
    for (RoaringBitmap bitmap : bitmaps) {
      bitmap.runOptimize();
      size += 4 + bitmap.serializedSizeInBytes();
    }
    ByteBuffer out = ByteBuffer.allocate(size + 12);
    out.putInt(size + 4);
    ByteBuffer body = out.slice().order(ByteOrder.LITTLE_ENDIAN);
    body.putInt(MAGIC);
    body.putLong(bitmaps.size());
    for (int key = 0; key < bitmaps.size(); key++) {
      body.putInt(key);
      bitmaps.get(key).serialize(body);
    }
    CRC32 crc = new CRC32();
    crc.update(out.array(), 4, size + 4);
    out.putInt(8 + size, (int) crc.getValue());
    ObjectNode node = JSON.createObjectNode();
    node.put("size", out.capacity());
    node.put("sha256", HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(out.array())));
    return node;
  }
}
