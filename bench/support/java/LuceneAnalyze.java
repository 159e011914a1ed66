import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.LowerCaseFilter;
import org.apache.lucene.analysis.StopFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.miscellaneous.LengthFilter;
import org.apache.lucene.analysis.pattern.PatternTokenizer;
import org.apache.lucene.analysis.snowball.SnowballFilter;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;

/**
 * Lucene's tokens for the embedded engine's analysis chains, to check that they are twins.
 *
 * <p>Each chain is given as {@code Analyzer.spec} writes it for Elasticsearch ({@code {"name",
 * "tokenizer": {"type": "pattern", "pattern", "group"}, "filter": [...]}}) and is built from the
 * Lucene classes that Elasticsearch 8 instantiates for those settings, in the same order:
 * PatternTokenizer(Pattern.compile(pattern), group), then per filter LengthFilter(min, max),
 * LowerCaseFilter, StopFilter(CharArraySet(words, ignore_case)), SnowballFilter(language).
 *
 * <p>Wire format, UTF-8 JSON lines: stdin's first line is {@code {"chains": [spec, ...]}}; every
 * further line is {@code {"text": "..."}}, optionally with {@code "chains": [index, ...]} to run
 * only some chains. For each text, stdout gets one line: an array holding one array of tokens per
 * chain run, in order. Output escapes every non-ASCII character, so any string (even a lone
 * surrogate) round-trips. One JVM serves a whole run.
 */
public final class LuceneAnalyze {
  private static final ObjectMapper JSON =
      JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();

  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    String header = in.readLine();
    if (header == null) {
      return;
    }
    List<Analyzer> chains = new ArrayList<>();
    for (JsonNode spec : JSON.readTree(header).get("chains")) {
      chains.add(chain(spec));
    }
    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < chains.size(); i++) {
      all.add(i);
    }
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.isEmpty()) {
        continue;
      }
      JsonNode request = JSON.readTree(line);
      String text = request.get("text").asText();
      List<Integer> which = all;
      if (request.has("chains")) {
        which = new ArrayList<>();
        for (JsonNode index : request.get("chains")) {
          which.add(index.asInt());
        }
      }
      List<List<String>> result = new ArrayList<>();
      for (int index : which) {
        result.add(tokens(chains.get(index), text));
      }
      out.write(JSON.writeValueAsString(result));
      out.write('\n');
      if (!in.ready()) {
        out.flush(); // the caller may wait for this answer before it writes more
      }
    }
    out.flush();
  }

  /** A reusable Lucene analyzer for one chain spec, failing loudly on anything Elasticsearch would build otherwise. */
  static Analyzer chain(JsonNode spec) {
    JsonNode tokenizer = spec.get("tokenizer");
    require("pattern".equals(tokenizer.path("type").asText()), "tokenizer type must be pattern: " + tokenizer);
    Pattern pattern = Pattern.compile(tokenizer.get("pattern").asText()); // ES: no flags unless "flags" is set
    int group = tokenizer.path("group").asInt(-1);
    List<JsonNode> filters = new ArrayList<>();
    spec.path("filter").forEach(filters::add);
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String field) {
        Tokenizer source = new PatternTokenizer(pattern, group);
        TokenStream stream = source;
        for (JsonNode filter : filters) {
          stream = filter(stream, filter);
        }
        return new TokenStreamComponents(source, stream);
      }
    };
  }

  static TokenStream filter(TokenStream stream, JsonNode filter) {
    String type = filter.path("type").asText();
    switch (type) {
      case "length":
        return new LengthFilter(stream, filter.path("min").asInt(0), filter.path("max").asInt(Integer.MAX_VALUE));
      case "lowercase":
        require(!filter.has("language"), "lowercase with a language is another class: " + filter);
        return new LowerCaseFilter(stream);
      case "stop":
        List<String> words = new ArrayList<>();
        filter.get("stopwords").forEach(word -> words.add(word.asText()));
        require(words.stream().noneMatch(w -> w.startsWith("_") && w.endsWith("_")), "named stop sets are not supported");
        require(filter.path("remove_trailing").asBoolean(true), "remove_trailing false is SuggestStopFilter");
        return new StopFilter(stream, new CharArraySet(words, filter.path("ignore_case").asBoolean(false)));
      case "snowball":
        // ES capitalizes the language and Lucene loads org.tartarus.snowball.ext.<Language>Stemmer
        String language = filter.get("language").asText();
        return new SnowballFilter(stream, Character.toUpperCase(language.charAt(0)) + language.substring(1));
      default:
        throw new IllegalArgumentException("unsupported filter " + filter);
    }
  }

  static List<String> tokens(Analyzer analyzer, String text) {
    List<String> tokens = new ArrayList<>();
    try (TokenStream stream = analyzer.tokenStream("text", text)) {
      CharTermAttribute term = stream.addAttribute(CharTermAttribute.class);
      stream.reset();
      while (stream.incrementToken()) {
        tokens.add(term.toString());
      }
      stream.end();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return tokens;
  }

  static void require(boolean condition, String message) {
    if (!condition) {
      throw new IllegalArgumentException(message);
    }
  }
}
