// Check parses each line of standard input (one Cypher statement, without
// its ';') with Memgraph's generated parser, rule `cypher` as Memgraph's
// src/query/frontend/opencypher/parser.hpp does, and prints "ok" or
// "error: <first syntax error>" per line. Compiled by grammartest against
// parser classes generated from a Memgraph tag's grammar; never committed
// generated code.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.antlr.v4.runtime.*;

public class Check {
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      final String[] first = {null};
      BaseErrorListener listener = new BaseErrorListener() {
        @Override
        public void syntaxError(Recognizer<?, ?> r, Object sym, int ln, int pos, String msg, RecognitionException e) {
          if (first[0] == null) first[0] = "line " + ln + ":" + pos + " " + msg;
        }
      };
      MemgraphCypherLexer lexer = new MemgraphCypherLexer(CharStreams.fromString(line));
      lexer.removeErrorListeners();
      lexer.addErrorListener(listener);
      MemgraphCypher parser = new MemgraphCypher(new CommonTokenStream(lexer));
      parser.removeErrorListeners();
      parser.addErrorListener(listener);
      parser.cypher();
      System.out.println(first[0] == null ? "ok" : "error: " + first[0].replace('\n', ' '));
    }
  }
}
