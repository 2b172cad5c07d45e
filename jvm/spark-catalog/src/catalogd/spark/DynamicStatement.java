package catalogd.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Tells catalogd's dynamic-table statements from the rest of Spark SQL, as
 * {@code catalogd.sql_lexer.is_dynamic_statement} does, and finds the table's name in them:
 * {@code CREATE [OR ALTER|REPLACE] DYNAMIC|MATERIALIZED TABLE [IF NOT EXISTS] <name> ...},
 * {@code ALTER ... TABLE <name> ...}, {@code DROP ... TABLE [IF EXISTS] <name>},
 * {@code SHOW CREATE ... TABLE <name>}, and {@code DESCRIBE|DESC ... TABLE <name>} (answered by
 * the plugin from catalogd's {@code getDynamicTable}). Only the header is read: the rest of the
 * statement (the query after AS) is catalogd's to parse, as written.
 */
final class DynamicStatement {
    /** The verb: CREATE, ALTER, DROP, SHOW (CREATE) or DESCRIBE. */
    final String verb;
    /** The name's parts, unquoted, as written (1 to 3). */
    final List<String> parts;
    /** Where the name starts and ends in the text. */
    final int nameStart;
    final int nameEnd;
    final String text;

    private DynamicStatement(String verb, List<String> parts, int nameStart, int nameEnd, String text) {
        this.verb = verb;
        this.parts = parts;
        this.nameStart = nameStart;
        this.nameEnd = nameEnd;
        this.text = text;
    }

    boolean isDescribe() {
        return "DESCRIBE".equals(verb);
    }

    /** The statement with its name replaced by {@code qualified} (the rest as written). */
    String withName(String qualified) {
        return text.substring(0, nameStart) + qualified + text.substring(nameEnd);
    }

    /** The statement, or null when {@code text} is not a dynamic-table statement (Spark's then). */
    static DynamicStatement parse(String text) {
        if (text == null) {
            return null;
        }
        try {
            Lexer lexer = new Lexer(text);
            Token verb = lexer.next();
            String v = verb.word();
            if (v == null) {
                return null;
            }
            Token kind = lexer.next();
            switch (v) {
                case "SHOW" -> {
                    if (!"CREATE".equals(kind.word())) {
                        return null;
                    }
                    kind = lexer.next();
                }
                case "CREATE" -> {
                    if ("OR".equals(kind.word())) {
                        String what = lexer.next().word();
                        if (!"ALTER".equals(what) && !"REPLACE".equals(what)) {
                            return null;
                        }
                        kind = lexer.next();
                    }
                }
                case "DESC", "DESCRIBE" -> v = "DESCRIBE";
                case "ALTER", "DROP" -> { }
                default -> {
                    return null;
                }
            }
            String k = kind.word();
            if (!("DYNAMIC".equals(k) || "MATERIALIZED".equals(k)) || !"TABLE".equals(lexer.next().word())) {
                return null;
            }
            Token first = lexer.next();
            if ("IF".equals(first.word()) && (v.equals("CREATE") || v.equals("DROP"))) {
                Token after = lexer.peek();
                if (v.equals("CREATE") && "NOT".equals(after.word())) {
                    lexer.next();
                    if (!"EXISTS".equals(lexer.next().word())) {
                        return new DynamicStatement(v, List.of(), 0, 0, text);
                    }
                    first = lexer.next();
                } else if (v.equals("DROP") && "EXISTS".equals(after.word())) {
                    lexer.next();
                    first = lexer.next();
                }
            }
            List<String> parts = new ArrayList<>();
            if (!first.isName()) {
                // Malformed: catalogd's parser says what it expected.
                return new DynamicStatement(v, parts, 0, 0, text);
            }
            parts.add(first.value);
            int end = first.end;
            while (parts.size() < 4 && lexer.peek().isPunct('.')) {
                lexer.next();
                Token part = lexer.next();
                if (!part.isName()) {
                    return new DynamicStatement(v, List.of(), 0, 0, text);
                }
                parts.add(part.value);
                end = part.end;
            }
            return new DynamicStatement(v, parts, first.start, end, text);
        } catch (IllegalArgumentException e) {
            return null;  // not lexable as ours: Spark's parser gives its own error
        }
    }

    /** One token: a word (value as written), a `quoted identifier`, a 'string' or punctuation. */
    record Token(char kind, String value, int start, int end) {
        /** The word in upper case, or null when this is not a word. */
        String word() {
            return kind == 'w' ? value.toUpperCase(Locale.ROOT) : null;
        }

        boolean isName() {
            return kind == 'w' || kind == 'i';
        }

        boolean isPunct(char c) {
            return kind == 'p' && value.charAt(0) == c;
        }
    }

    /** catalogd's lexer (sql_lexer.py): whitespace, -- and /* comments skipped. */
    static final class Lexer {
        private final String text;
        private int pos;
        private Token peeked;

        Lexer(String text) {
            this.text = text;
        }

        Token peek() {
            if (peeked == null) {
                peeked = scan();
            }
            return peeked;
        }

        Token next() {
            Token t = peek();
            peeked = null;
            return t;
        }

        /** [A-Za-z0-9_], as catalogd's lexer. */
        private static boolean wordChar(char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        }

        private Token scan() {
            int n = text.length();
            int i = pos;
            while (i < n) {
                if (Character.isWhitespace(text.charAt(i))) {
                    i++;
                } else if (text.startsWith("--", i)) {
                    int nl = text.indexOf('\n', i);
                    i = nl < 0 ? n : nl + 1;
                } else if (text.startsWith("/*", i)) {
                    int close = text.indexOf("*/", i + 2);
                    if (close < 0) {
                        throw new IllegalArgumentException("unterminated comment");
                    }
                    i = close + 2;
                } else {
                    break;
                }
            }
            if (i >= n) {
                pos = n;
                return new Token('e', "", n, n);
            }
            char c = text.charAt(i);
            Token token;
            if (c == '\'' || c == '`') {
                StringBuilder value = new StringBuilder();
                int j = i + 1;
                while (true) {
                    int close = text.indexOf(c, j);
                    if (close < 0) {
                        throw new IllegalArgumentException("unterminated quote");
                    }
                    value.append(text, j, close);
                    if (close + 1 < n && text.charAt(close + 1) == c) {
                        value.append(c);
                        j = close + 2;
                        continue;
                    }
                    token = new Token(c == '`' ? 'i' : 's', value.toString(), i, close + 1);
                    break;
                }
            } else if ("(),=.;".indexOf(c) >= 0) {
                token = new Token('p', String.valueOf(c), i, i + 1);
            } else if (wordChar(c)) {
                int j = i;
                while (j < n && wordChar(text.charAt(j))) {
                    j++;
                }
                token = new Token('w', text.substring(i, j), i, j);
            } else {
                token = new Token('o', String.valueOf(c), i, i + 1);
            }
            pos = token.end();
            return token;
        }
    }
}
