// A FileIO for the tests' S3 server (moto on 127.0.0.1), for the REST catalog server to write
// table metadata there: plain path-style HTTP requests (GET, HEAD, PUT, DELETE) on
// "s3.endpoint". They name the access key "s3.access-key-id" in an Authorization header with
// no real signature: moto takes the caller from it and checks no signature (an anonymous
// caller may not touch an object once written); a real S3 would refuse them.
//
// Iceberg's own S3FileIO needs the AWS SDK, which no registry this project installs from
// carries; this is the least a catalog needs: whole-object reads and writes. Test code only.

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SeekableInputStream;

public class PlainS3FileIO implements FileIO {
  private Map<String, String> properties = Map.of();
  private String endpoint;
  private String authorization;
  private HttpClient client;

  public PlainS3FileIO() {}

  @Override
  public void initialize(Map<String, String> props) {
    this.properties = Map.copyOf(props);
    String given = props.get("s3.endpoint");
    if (given == null) {
      throw new IllegalArgumentException("PlainS3FileIO needs s3.endpoint");
    }
    this.endpoint = given.replaceAll("/+$", "");
    String key = props.getOrDefault("s3.access-key-id", "testing");
    String region = props.getOrDefault("s3.region", "us-east-1");
    this.authorization = "AWS4-HMAC-SHA256 Credential=" + key + "/20260101/" + region
        + "/s3/aws4_request, SignedHeaders=host, Signature=0";
    this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  }

  @Override
  public Map<String, String> properties() {
    return properties;
  }

  @Override
  public InputFile newInputFile(String location) {
    return new In(location);
  }

  @Override
  public OutputFile newOutputFile(String location) {
    return new Out(location);
  }

  @Override
  public void deleteFile(String location) {
    send(location, HttpRequest.newBuilder(uri(location)).DELETE(), true);
  }

  /** s3://bucket/key (any s3 spelling) as the server's path-style URL. */
  private URI uri(String location) {
    int scheme = location.indexOf("://");
    if (scheme < 0 || !location.substring(0, scheme).startsWith("s3")) {
      throw new IllegalArgumentException("not an s3:// location: " + location);
    }
    StringBuilder path = new StringBuilder(endpoint);
    for (String part : location.substring(scheme + 3).split("/", -1)) {
      path.append('/').append(URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20"));
    }
    return URI.create(path.toString());
  }

  private HttpResponse<byte[]> send(String location, HttpRequest.Builder request, boolean gone) {
    HttpResponse<byte[]> response;
    try {
      request.header("Authorization", authorization);
      response = client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    } catch (IOException e) {
      throw new UncheckedIOException(location + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UncheckedIOException(new IOException("interrupted: " + location, e));
    }
    int status = response.statusCode();
    if (status == 404 && !gone) {
      throw new NotFoundException("no such object: %s", location);
    }
    if (status >= 300 && status != 404) {
      String body = new String(response.body(), StandardCharsets.UTF_8);
      throw new UncheckedIOException(
          new IOException(location + ": HTTP " + status + " " + body.substring(0, Math.min(300, body.length()))));
    }
    return response;
  }

  private final class In implements InputFile {
    private final String location;
    private Long length;

    In(String location) {
      this.location = location;
    }

    @Override
    public long getLength() {
      if (length == null) {
        HttpResponse<byte[]> head =
            send(location, HttpRequest.newBuilder(uri(location)).method("HEAD", HttpRequest.BodyPublishers.noBody()), false);
        length = head.headers().firstValueAsLong("Content-Length").orElseThrow();
      }
      return length;
    }

    @Override
    public SeekableInputStream newStream() {
      byte[] bytes = send(location, HttpRequest.newBuilder(uri(location)).GET(), false).body();
      return new Bytes(bytes);
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public boolean exists() {
      HttpResponse<byte[]> head =
          send(location, HttpRequest.newBuilder(uri(location)).method("HEAD", HttpRequest.BodyPublishers.noBody()), true);
      return head.statusCode() == 200;
    }
  }

  private static final class Bytes extends SeekableInputStream {
    private final byte[] bytes;
    private int pos;

    Bytes(byte[] bytes) {
      this.bytes = bytes;
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public void seek(long newPos) {
      pos = (int) Math.min(newPos, bytes.length);
    }

    @Override
    public int read() {
      return pos < bytes.length ? bytes[pos++] & 0xff : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (pos >= bytes.length) {
        return -1;
      }
      int n = Math.min(len, bytes.length - pos);
      System.arraycopy(bytes, pos, b, off, n);
      pos += n;
      return n;
    }
  }

  private final class Out implements OutputFile {
    private final String location;

    Out(String location) {
      this.location = location;
    }

    @Override
    public PositionOutputStream create() {
      if (new In(location).exists()) {
        throw new AlreadyExistsException("object exists: %s", location);
      }
      return createOrOverwrite();
    }

    @Override
    public PositionOutputStream createOrOverwrite() {
      return new PositionOutputStream() {
        private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        private boolean closed;

        @Override
        public long getPos() {
          return buffer.size();
        }

        @Override
        public void write(int b) {
          buffer.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) {
          buffer.write(b, off, len);
        }

        @Override
        public void close() {
          if (closed) {
            return;
          }
          closed = true;
          send(location, HttpRequest.newBuilder(uri(location))
              .PUT(HttpRequest.BodyPublishers.ofByteArray(buffer.toByteArray())), false);
        }
      };
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public InputFile toInputFile() {
      return new In(location);
    }
  }
}
