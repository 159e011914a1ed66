import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.LowerCaseFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.miscellaneous.LengthFilter;
import org.apache.lucene.analysis.pattern.PatternTokenizer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.DisjunctionMaxQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.store.MMapDirectory;

/**
 * Lucene itself on the embedded engine's corpus and queries, for bench/engine_bench.py --lucene.
 *
 * <pre>
 * java LuceneBench index CORPUS.jsonl[.gz] INDEX_DIR
 *     one thread; prints {"docs", "wall", "cpu", "process_cpu", "bytes"} (seconds, index bytes)
 * java LuceneBench serve INDEX_DIR QUERIES.txt K best_fields|most_fields
 *     prints {"queries", "analysis_cpu", "analysis_wall"} once the queries are analysed and built,
 *     then answers stdin commands, one JSON line each:
 *       run        every query once: {"cpu" (this thread), "process_cpu", "wall", "hits"}
 *       dump PATH  the last run's top K (one run first if none): lines "query doc bits",
 *                  bits = Float.floatToIntBits(score); prints {"lines"}
 *       quit
 * </pre>
 *
 * The schema is the project's: fields title and text, DOCS_AND_FREQS with norms,
 * BM25Similarity(1.2, 0.3), the "plain" analyzer of pipeline/engines/analyzers.py (pattern
 * tokenizer on WORD_PATTERN_JAVA group 0, length filter 0-255, lowercase). A query is what
 * Elasticsearch's multi_match builds for fields title^2 and text: per field one match query
 * (a TermQuery for one token, else a BooleanQuery of SHOULD TermQuery per token, repeats kept;
 * Lucene's rewrite merges them), combined by best_fields (DisjunctionMaxQuery, tie 0) or
 * most_fields (BooleanQuery, two SHOULD clauses). Queries are analysed and built before any
 * run, so "run" times rewrite + search only; the build is timed once, at start-up.
 */
public class LuceneBench {
  static final Pattern WORDS = Pattern.compile("[\\p{L}\\p{M}\\p{N}]+"); // analyzers.WORD_PATTERN_JAVA
  static final int MAX_TOKEN_UTF16 = 255; // analyzers.MAX_TOKEN_UTF16
  static final float K1 = 1.2f, B = 0.3f, TITLE_BOOST = 2f;
  static final ThreadMXBean THREAD = ManagementFactory.getThreadMXBean();
  static final com.sun.management.OperatingSystemMXBean OS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  public static void main(String[] args) throws IOException {
    if (args.length == 3 && args[0].equals("index")) {
      index(Path.of(args[1]), Path.of(args[2]));
    } else if (args.length == 5 && args[0].equals("serve")) {
      serve(Path.of(args[1]), Path.of(args[2]), Integer.parseInt(args[3]), args[4]);
    } else {
      System.err.println("usage: LuceneBench index CORPUS INDEX_DIR | serve INDEX_DIR QUERIES K COMBINE");
      System.exit(2);
    }
  }

  static Analyzer plain() {
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String field) {
        Tokenizer words = new PatternTokenizer(WORDS, 0);
        TokenStream stream = new LowerCaseFilter(new LengthFilter(words, 0, MAX_TOKEN_UTF16));
        return new TokenStreamComponents(words, stream);
      }
    };
  }

  /** Seconds since a start time: {wall, this thread's CPU, the process's CPU (GC and JIT included)}. */
  static double[] since(long[] start) {
    long[] now = clocks();
    return new double[] {(now[0] - start[0]) / 1e9, (now[1] - start[1]) / 1e9, (now[2] - start[2]) / 1e9};
  }

  static long[] clocks() {
    return new long[] {System.nanoTime(), THREAD.getCurrentThreadCpuTime(), OS.getProcessCpuTime()};
  }

  static void index(Path corpus, Path indexDir) throws IOException {
    FieldType type = new FieldType();
    type.setTokenized(true);
    type.setIndexOptions(IndexOptions.DOCS_AND_FREQS); // norms are on unless omitted
    type.freeze();
    IndexWriterConfig config = new IndexWriterConfig(plain())
        .setSimilarity(new BM25Similarity(K1, B))
        .setOpenMode(IndexWriterConfig.OpenMode.CREATE)
        .setRAMBufferSizeMB(256)
        .setMergePolicy(new LogByteSizeMergePolicy()) // merges adjacent segments only: doc id = file position
        .setMergeScheduler(new SerialMergeScheduler()); // merges on this thread
    ObjectMapper json = new ObjectMapper();
    long[] start = clocks();
    int docs = 0;
    try (Directory dir = FSDirectory.open(indexDir);
        IndexWriter writer = new IndexWriter(dir, config);
        BufferedReader lines = reader(corpus)) {
      for (String line; (line = lines.readLine()) != null; ) {
        if (line.isBlank()) continue; // as read_corpus
        JsonNode record = json.readTree(line);
        Document doc = new Document();
        doc.add(new Field("title", record.path("title").asText(), type));
        doc.add(new Field("text", record.path("text").asText(), type));
        doc.add(new NumericDocValuesField("position", docs++)); // only to check the order below
        writer.addDocument(doc);
      }
      writer.forceMerge(1);
      writer.commit();
    }
    double[] took = since(start);
    long bytes;
    try (Directory dir = FSDirectory.open(indexDir); DirectoryReader reader = DirectoryReader.open(dir)) {
      if (reader.leaves().size() != 1 || reader.maxDoc() != docs) throw new IllegalStateException("not one segment of " + docs);
      NumericDocValues position = reader.leaves().get(0).reader().getNumericDocValues("position");
      for (int doc = 0; doc < docs; doc++) {
        if (!position.advanceExact(doc) || position.longValue() != doc) throw new IllegalStateException("doc " + doc + " out of file order");
      }
      bytes = 0;
      for (String file : dir.listAll()) bytes += dir.fileLength(file);
    }
    System.out.printf(Locale.ROOT, "{\"docs\": %d, \"wall\": %.6f, \"cpu\": %.6f, \"process_cpu\": %.6f, \"bytes\": %d}%n",
        docs, took[0], took[1], took[2], bytes);
  }

  static BufferedReader reader(Path path) throws IOException {
    InputStream in = Files.newInputStream(path);
    if (path.toString().endsWith(".gz")) in = new GZIPInputStream(in, 1 << 16);
    return new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
  }

  static List<String> tokens(Analyzer analyzer, String field, String text) throws IOException {
    List<String> out = new ArrayList<>();
    try (TokenStream stream = analyzer.tokenStream(field, text)) {
      CharTermAttribute term = stream.addAttribute(CharTermAttribute.class);
      stream.reset();
      while (stream.incrementToken()) out.add(term.toString());
      stream.end();
    }
    return out;
  }

  /** Elasticsearch's match query (operator OR) on one field; null when the text has no token. */
  static Query match(Analyzer analyzer, String field, String text) throws IOException {
    List<String> tokens = tokens(analyzer, field, text);
    if (tokens.isEmpty()) return null;
    if (tokens.size() == 1) return new TermQuery(new Term(field, tokens.get(0)));
    BooleanQuery.Builder bool = new BooleanQuery.Builder();
    for (String token : tokens) bool.add(new TermQuery(new Term(field, token)), BooleanClause.Occur.SHOULD);
    return bool.build();
  }

  /** Elasticsearch's multi_match over title^2 and text; null (no hits) when the query has no token. */
  static Query multiMatch(Analyzer analyzer, String text, String combine) throws IOException {
    Query title = match(analyzer, "title", text), body = match(analyzer, "text", text);
    if (title == null || body == null) return null; // one analyzer for both fields: both or neither
    title = new BoostQuery(title, TITLE_BOOST);
    if (combine.equals("best_fields")) return new DisjunctionMaxQuery(List.of(title, body), 0f);
    if (!combine.equals("most_fields")) throw new IllegalArgumentException("combine: " + combine);
    return new BooleanQuery.Builder()
        .add(title, BooleanClause.Occur.SHOULD)
        .add(body, BooleanClause.Occur.SHOULD)
        .build();
  }

  static TopDocs search(IndexSearcher searcher, Query query, int k) throws IOException {
    return query == null ? null : searcher.search(query, k); // null: a query with no token
  }

  static void serve(Path indexDir, Path queryFile, int k, String combine) throws IOException {
    IndexSearcher.setMaxClauseCount(Integer.MAX_VALUE); // long queries: the embedded engine has no such limit
    Analyzer analyzer = plain();
    List<String> texts;
    try (Stream<String> lines = Files.lines(queryFile, StandardCharsets.UTF_8)) {
      texts = lines.toList();
    }
    long[] start = clocks();
    Query[] queries = new Query[texts.size()];
    for (int i = 0; i < queries.length; i++) queries[i] = multiMatch(analyzer, texts.get(i), combine);
    double[] analysis = since(start);

    try (Directory dir = new MMapDirectory(indexDir); DirectoryReader reader = DirectoryReader.open(dir)) {
      IndexSearcher searcher = new IndexSearcher(reader); // no executor: one thread
      searcher.setSimilarity(new BM25Similarity(K1, B));
      searcher.setQueryCache(null); // it only caches filters anyway; rounds must not help each other
      TopDocs[] results = null;
      System.out.printf(Locale.ROOT, "{\"queries\": %d, \"analysis_cpu\": %.6f, \"analysis_wall\": %.6f}%n",
          queries.length, analysis[1], analysis[0]);
      System.out.flush();
      BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String command; (command = commands.readLine()) != null && !command.equals("quit"); ) {
        if (command.equals("run")) {
          results = new TopDocs[queries.length];
          long hits = 0;
          start = clocks();
          for (int i = 0; i < queries.length; i++) {
            results[i] = search(searcher, queries[i], k);
            hits += results[i] == null ? 0 : results[i].scoreDocs.length;
          }
          double[] took = since(start);
          System.out.printf(Locale.ROOT, "{\"cpu\": %.6f, \"process_cpu\": %.6f, \"wall\": %.6f, \"hits\": %d}%n",
              took[1], took[2], took[0], hits);
        } else if (command.startsWith("each ")) { // every query timed alone: its thread CPU ns, one line each
          results = new TopDocs[queries.length];
          try (BufferedWriter out = Files.newBufferedWriter(Path.of(command.substring(5)), StandardCharsets.UTF_8)) {
            for (int i = 0; i < queries.length; i++) {
              long before = THREAD.getCurrentThreadCpuTime();
              results[i] = search(searcher, queries[i], k);
              out.write((THREAD.getCurrentThreadCpuTime() - before) + "\n");
            }
          }
          System.out.printf(Locale.ROOT, "{\"lines\": %d}%n", queries.length);
        } else if (command.startsWith("dump ")) {
          if (results == null) {
            results = new TopDocs[queries.length];
            for (int i = 0; i < queries.length; i++) results[i] = search(searcher, queries[i], k);
          }
          long lines = 0;
          try (BufferedWriter out = Files.newBufferedWriter(Path.of(command.substring(5)), StandardCharsets.UTF_8)) {
            for (int i = 0; i < results.length; i++) {
              if (results[i] == null) continue;
              for (ScoreDoc hit : results[i].scoreDocs) {
                out.write(i + " " + hit.doc + " " + Float.floatToIntBits(hit.score) + "\n");
                lines++;
              }
            }
          }
          System.out.printf(Locale.ROOT, "{\"lines\": %d}%n", lines);
        } else {
          System.out.println("{\"error\": \"unknown command\"}");
        }
        System.out.flush();
      }
    }
  }
}
