package org.kylix;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A minimal JSON reader for {@link Comm#statsMap()}: objects become LinkedHashMaps, arrays
 * ArrayLists, integers Long, other numbers Double, and true/false/null themselves.
 */
final class Json {
  private final String s;
  private int i;

  private Json(String s) {
    this.s = s;
  }

  static Object parse(String s) {
    Json j = new Json(s);
    Object v = j.value();
    j.ws();
    if (j.i != s.length()) {
      throw j.error("trailing characters");
    }
    return v;
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("JSON: " + what + " at offset " + i);
  }

  private void ws() {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
  }

  private Object value() {
    ws();
    if (i >= s.length()) {
      throw error("unexpected end");
    }
    char c = s.charAt(i);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        return number();
    }
  }

  private Object literal(String word, Object v) {
    if (!s.startsWith(word, i)) {
      throw error("bad literal");
    }
    i += word.length();
    return v;
  }

  private Map<String, Object> object() {
    Map<String, Object> m = new LinkedHashMap<>();
    i++;
    ws();
    if (i < s.length() && s.charAt(i) == '}') {
      i++;
      return m;
    }
    while (true) {
      ws();
      if (i >= s.length() || s.charAt(i) != '"') {
        throw error("expected a key");
      }
      String k = string();
      ws();
      if (i >= s.length() || s.charAt(i) != ':') {
        throw error("expected ':'");
      }
      i++;
      m.put(k, value());
      ws();
      if (i < s.length() && s.charAt(i) == ',') {
        i++;
      } else if (i < s.length() && s.charAt(i) == '}') {
        i++;
        return m;
      } else {
        throw error("expected ',' or '}'");
      }
    }
  }

  private List<Object> array() {
    List<Object> l = new ArrayList<>();
    i++;
    ws();
    if (i < s.length() && s.charAt(i) == ']') {
      i++;
      return l;
    }
    while (true) {
      l.add(value());
      ws();
      if (i < s.length() && s.charAt(i) == ',') {
        i++;
      } else if (i < s.length() && s.charAt(i) == ']') {
        i++;
        return l;
      } else {
        throw error("expected ',' or ']'");
      }
    }
  }

  private String string() {
    StringBuilder b = new StringBuilder();
    i++; // opening quote
    while (i < s.length()) {
      char c = s.charAt(i++);
      if (c == '"') {
        return b.toString();
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      if (i >= s.length()) {
        break;
      }
      char e = s.charAt(i++);
      switch (e) {
        case 'n': b.append('\n'); break;
        case 't': b.append('\t'); break;
        case 'r': b.append('\r'); break;
        case 'b': b.append('\b'); break;
        case 'f': b.append('\f'); break;
        case 'u':
          if (i + 4 > s.length()) {
            throw error("bad \\u escape");
          }
          b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
          break;
        default: b.append(e); // \" \\ \/
      }
    }
    throw error("unterminated string");
  }

  private Object number() {
    int start = i;
    boolean integral = true;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '.' || c == 'e' || c == 'E') {
        integral = false;
      } else if (!(c == '-' || c == '+' || (c >= '0' && c <= '9'))) {
        break;
      }
      i++;
    }
    String t = s.substring(start, i);
    if (t.isEmpty()) {
      throw error("unexpected character");
    }
    try {
      if (integral) {
        try {
          return Long.parseLong(t);
        } catch (NumberFormatException big) {
          return Double.parseDouble(t);
        }
      }
      return Double.parseDouble(t);
    } catch (NumberFormatException e) {
      throw error("bad number " + t);
    }
  }
}
