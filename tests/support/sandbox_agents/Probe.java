// A Java agent: java.net.http to NCBI's public URL in its code, then the canary by a
// Socket. Reads the question's id from stdin; prints its answer as JSON.
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

public class Probe {
  public static void main(String[] args) throws Exception {
    String question = new String(System.in.readAllBytes());
    String id = question.replaceAll("(?s).*\"id\": *\"([^\"]*)\".*", "$1");
    String url = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=" + id;
    HttpResponse<String> reply = HttpClient.newHttpClient()
        .send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
    boolean connected;
    try (Socket canary = new Socket("127.0.0.1", Integer.parseInt(System.getenv("CANARY_PORT")))) {
      connected = true;
    } catch (java.io.IOException refused) {
      connected = false;
    }
    String inner = "{\"reply\": \"" + reply.body().replace("\\", "\\\\").replace("\"", "\\\"")
        + "\", \"connected\": " + connected + "}";
    System.out.println("{\"answer\": \"" + inner.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}");
  }
}
