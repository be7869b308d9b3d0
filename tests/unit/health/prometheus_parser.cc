#include "prometheus_parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace natsfleet::testing {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

bool is_metric_name(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

bool is_label_name(std::string_view s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A float as the format allows it: a decimal number (optionally with exponent), +Inf, -Inf, NaN.
std::optional<double> parse_float(std::string_view s) {
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  if (digits.empty()) return std::nullopt;
  // from_chars alone would also take "inf", "nan" and "infinity" spelled any way.
  for (char c : digits) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'))
      return std::nullopt;
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::string series_key(std::string_view name, const PromLabels& labels) {
  std::string key(name);
  key += '{';
  for (const auto& [k, v] : labels) {
    key += k;
    key += "=\"";
    for (char c : v) {
      if (c == '\\' || c == '"') key += '\\';
      if (c == '\n') {
        key += "\\n";
        continue;
      }
      key += c;
    }
    key += "\",";
  }
  key += '}';
  return key;
}

class Parser {
 public:
  ParsedMetrics run(std::string_view text) {
    std::size_t start = 0;
    while (start < text.size()) {
      ++line_no_;
      const std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) fail("the last line does not end with a line feed");
      line(text.substr(start, end - start));
      start = end + 1;
    }
    close_current();
    return std::move(out_);
  }

 private:
  struct HistogramGroup {
    std::size_t first_line = 0;
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative count), text order
    std::optional<double> sum;
    std::optional<double> count;
  };

  struct Family {
    std::string type;  // empty: no TYPE line (untyped)
    bool has_help = false;
    bool has_samples = false;
    bool closed = false;
    std::map<std::string, HistogramGroup> groups;  // histogram and summary, by labels minus le
  };

  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("line " + std::to_string(line_no_) + ": " + why);
  }
  [[noreturn]] void fail_at(std::size_t line, const std::string& why) const {
    throw std::runtime_error("line " + std::to_string(line) + ": " + why);
  }

  void line(std::string_view l) {
    if (l.find('\r') != std::string_view::npos) fail("carriage return in line");
    if (l.empty()) return;
    if (l.front() == '#') {
      comment(l.substr(1));
      return;
    }
    if (is_blank(l.front())) {
      // Lines of only blanks are empty lines; anything else must not be indented.
      if (l.find_first_not_of(" \t") == std::string_view::npos) return;
      fail("a sample line must start with the metric name");
    }
    sample(l);
  }

  // Moves to `name`'s family; a family left earlier may not come back.
  Family& enter(const std::string& name) {
    if (name != current_) {
      close_current();
      if (families_[name].closed) fail("family " + name + " is split: its lines must be together");
      current_ = name;
    }
    return families_[name];
  }

  void close_current() {
    if (current_.empty()) return;
    Family& family = families_[current_];
    family.closed = true;
    if (family.type == "histogram") {
      for (const auto& [labels, g] : family.groups) {
        const std::string where = "histogram " + current_ + labels;
        if (g.buckets.empty() || !std::isinf(g.buckets.back().first))
          fail_at(g.first_line, where + " has no le=\"+Inf\" bucket");
        if (!g.count) fail_at(g.first_line, where + " has no _count");
        if (!g.sum) fail_at(g.first_line, where + " has no _sum");
        if (*g.count != g.buckets.back().second)
          fail_at(g.first_line, where + ": the +Inf bucket differs from _count");
      }
    } else if (family.type == "summary") {
      for (const auto& [labels, g] : family.groups) {
        const std::string where = "summary " + current_ + labels;
        if (!g.count) fail_at(g.first_line, where + " has no _count");
        if (!g.sum) fail_at(g.first_line, where + " has no _sum");
      }
    }
    current_.clear();
  }

  void comment(std::string_view rest) {
    std::size_t i = 0;
    while (i < rest.size() && is_blank(rest[i])) ++i;
    std::size_t j = i;
    while (j < rest.size() && !is_blank(rest[j])) ++j;
    const std::string_view keyword = rest.substr(i, j - i);
    if (keyword != "HELP" && keyword != "TYPE") return;  // a plain comment
    if (i == 0) fail("expected a blank between # and " + std::string(keyword));
    if (j == rest.size() || !is_blank(rest[j])) fail(std::string(keyword) + " needs a metric name");
    while (j < rest.size() && is_blank(rest[j])) ++j;
    std::size_t k = j;
    while (k < rest.size() && !is_blank(rest[k])) ++k;
    const std::string name(rest.substr(j, k - j));
    if (!is_metric_name(name))
      fail("invalid metric name '" + name + "' in " + std::string(keyword));
    while (k < rest.size() && is_blank(rest[k])) ++k;
    const std::string_view tail = rest.substr(k);

    Family& family = enter(name);
    if (family.has_samples) fail(std::string(keyword) + " for " + name + " after its samples");
    if (keyword == "HELP") {
      if (family.has_help) fail("second HELP for " + name);
      family.has_help = true;
      out_.help[name] = unescape_help(tail);
      return;
    }
    if (!family.type.empty()) fail("second TYPE for " + name);
    std::string_view type = tail;
    while (!type.empty() && is_blank(type.back())) type.remove_suffix(1);
    if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" &&
        type != "untyped") {
      fail("unknown TYPE '" + std::string(type) + "' for " + name);
    }
    if (type == "counter" && !ends_with(name, "_total"))
      fail("counter " + name + " must be named *_total");
    // Samples already read as untyped under a suffixed name belong to this family too.
    std::vector<std::string_view> suffixes;
    if (type == "histogram") suffixes = {"_bucket", "_sum", "_count"};
    if (type == "summary") suffixes = {"_sum", "_count"};
    for (auto suffix : suffixes) {
      auto it = families_.find(name + std::string(suffix));
      if (it != families_.end() && it->second.has_samples)
        fail("TYPE for " + name + " after its samples " + name + std::string(suffix));
    }
    family.type = std::string(type);
    out_.types[name] = family.type;
  }

  std::string unescape_help(std::string_view s) const {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\') {
        out += s[i];
        continue;
      }
      if (++i == s.size()) fail("HELP ends in a lone backslash");
      if (s[i] == '\\')
        out += '\\';
      else if (s[i] == 'n')
        out += '\n';
      else
        fail(std::string("invalid escape \\") + s[i] + " in HELP");
    }
    return out;
  }

  // The family a sample belongs to: a histogram's _bucket/_sum/_count and a summary's
  // _sum/_count belong to the typed base name.
  std::string family_of(const std::string& name) const {
    auto typed = [&](std::string_view base, std::initializer_list<std::string_view> types) {
      auto it = families_.find(std::string(base));
      if (it == families_.end()) return false;
      for (auto t : types)
        if (it->second.type == t) return true;
      return false;
    };
    if (ends_with(name, "_bucket")) {
      const auto base = std::string_view(name).substr(0, name.size() - 7);
      if (typed(base, {"histogram"})) return std::string(base);
    }
    for (std::string_view suffix : {"_sum", "_count"}) {
      if (ends_with(name, suffix)) {
        const auto base = std::string_view(name).substr(0, name.size() - suffix.size());
        if (typed(base, {"histogram", "summary"})) return std::string(base);
      }
    }
    return name;
  }

  void sample(std::string_view l) {
    std::size_t i = 0;
    while (i < l.size() && !is_blank(l[i]) && l[i] != '{') ++i;
    Sample s;
    s.name = std::string(l.substr(0, i));
    if (!is_metric_name(s.name)) fail("invalid metric name '" + s.name + "'");
    if (i < l.size() && l[i] == '{') i = labels(l, i + 1, s.labels);
    if (i == l.size() || !is_blank(l[i])) fail("expected a blank and a value after " + s.name);
    while (i < l.size() && is_blank(l[i])) ++i;
    std::size_t j = i;
    while (j < l.size() && !is_blank(l[j])) ++j;
    const auto value = parse_float(l.substr(i, j - i));
    if (!value) fail("invalid value '" + std::string(l.substr(i, j - i)) + "'");
    s.value = *value;
    while (j < l.size() && is_blank(l[j])) ++j;
    if (j < l.size()) {
      std::size_t k = j;
      while (k < l.size() && !is_blank(l[k])) ++k;
      int64_t ts = 0;
      const auto [end, ec] = std::from_chars(l.data() + j, l.data() + k, ts);
      if (ec != std::errc() || end != l.data() + k)
        fail("invalid timestamp '" + std::string(l.substr(j, k - j)) + "'");
      s.timestamp_ms = ts;
      while (k < l.size() && is_blank(l[k])) ++k;
      if (k != l.size()) fail("unexpected text after the timestamp");
    }

    const std::string family_name = family_of(s.name);
    Family& family = enter(family_name);
    family.has_samples = true;
    if (!seen_.insert(series_key(s.name, s.labels)).second)
      fail("duplicate series " + series_key(s.name, s.labels));
    check_typed(family_name, family, s);
    out_.samples.push_back(std::move(s));
  }

  // Parses `k="v",...}` from `i` (just after `{`); returns the index after `}`.
  std::size_t labels(std::string_view l, std::size_t i, PromLabels& out) const {
    auto skip = [&] {
      while (i < l.size() && is_blank(l[i])) ++i;
    };
    for (;;) {
      skip();
      if (i == l.size()) fail("unterminated label set");
      if (l[i] == '}') return i + 1;
      std::size_t j = i;
      while (j < l.size() && l[j] != '=' && !is_blank(l[j]) && l[j] != '}' && l[j] != ',') ++j;
      const std::string name(l.substr(i, j - i));
      if (!is_label_name(name)) fail("invalid label name '" + name + "'");
      if (name.rfind("__", 0) == 0) fail("label name '" + name + "' is reserved");
      i = j;
      skip();
      if (i == l.size() || l[i] != '=') fail("expected = after label " + name);
      ++i;
      skip();
      if (i == l.size() || l[i] != '"') fail("label " + name + ": value must be quoted");
      ++i;
      std::string value;
      for (;;) {
        if (i == l.size()) fail("label " + name + ": unterminated value");
        const char c = l[i++];
        if (c == '"') break;
        if (c != '\\') {
          value += c;
          continue;
        }
        if (i == l.size()) fail("label " + name + ": unterminated value");
        const char e = l[i++];
        if (e == '\\')
          value += '\\';
        else if (e == '"')
          value += '"';
        else if (e == 'n')
          value += '\n';
        else
          fail("label " + name + ": invalid escape \\" + std::string(1, e));
      }
      if (!out.emplace(name, std::move(value)).second) fail("label " + name + " given twice");
      skip();
      if (i == l.size()) fail("unterminated label set");
      if (l[i] == ',') {
        ++i;
        continue;
      }
      if (l[i] != '}') fail("expected , or } after label " + name);
    }
  }

  void check_typed(const std::string& family_name, Family& family, const Sample& s) {
    const std::string& type = family.type;
    if (type.empty() || type == "untyped" || type == "gauge") return;
    if (type == "counter") {
      if (std::isnan(s.value) || s.value < 0) fail("counter " + s.name + " is negative or NaN");
      return;
    }
    PromLabels rest = s.labels;
    if (type == "histogram") {
      const std::string suffix = s.name.substr(family_name.size());
      if (suffix != "_bucket" && suffix != "_sum" && suffix != "_count")
        fail("histogram " + family_name + " sample " + s.name + " is not _bucket, _sum or _count");
      const auto le = rest.find("le");
      if ((suffix == "_bucket") != (le != rest.end()))
        fail(suffix == "_bucket" ? "bucket without an le label" : "le label outside a bucket");
      std::optional<double> bound;
      if (le != rest.end()) {
        bound = parse_float(le->second);
        if (!bound || std::isnan(*bound)) fail("invalid le \"" + le->second + "\"");
        rest.erase(le);
      }
      HistogramGroup& g = group(family, rest);
      if (suffix == "_bucket") {
        if (std::isnan(s.value) || s.value < 0) fail("negative or NaN bucket count");
        if (!g.buckets.empty()) {
          if (*bound <= g.buckets.back().first) fail("buckets out of le order");
          if (s.value < g.buckets.back().second)
            fail("bucket le=\"" + s.labels.at("le") +
                 "\" is below the previous one: not cumulative");
        }
        g.buckets.emplace_back(*bound, s.value);
      } else if (suffix == "_sum") {
        g.sum = s.value;
      } else {
        if (std::isnan(s.value) || s.value < 0) fail("negative or NaN _count");
        g.count = s.value;
      }
      return;
    }
    // summary
    const std::string suffix = s.name.substr(family_name.size());
    if (suffix.empty()) {
      const auto q = rest.find("quantile");
      if (q == rest.end()) fail("summary sample " + s.name + " without a quantile label");
      const auto bound = parse_float(q->second);
      if (!bound || *bound < 0 || *bound > 1) fail("invalid quantile \"" + q->second + "\"");
      rest.erase(q);
      group(family, rest);
    } else if (suffix == "_sum") {
      group(family, rest).sum = s.value;
    } else {
      group(family, rest).count = s.value;
    }
  }

  HistogramGroup& group(Family& family, const PromLabels& labels) {
    auto [it, inserted] = family.groups.try_emplace(series_key("", labels));
    if (inserted) it->second.first_line = line_no_;
    return it->second;
  }

  ParsedMetrics out_;
  std::map<std::string, Family> families_;
  std::set<std::string> seen_;
  std::string current_;
  std::size_t line_no_ = 0;
};

}  // namespace

ParsedMetrics parse_prometheus(std::string_view text) { return Parser().run(text); }

const Sample* ParsedMetrics::find(std::string_view name, const PromLabels& labels) const {
  for (const auto& s : samples)
    if (s.name == name && s.labels == labels) return &s;
  return nullptr;
}

double ParsedMetrics::value(std::string_view name, const PromLabels& labels) const {
  if (const Sample* s = find(name, labels)) return s->value;
  throw std::out_of_range("no series " + series_key(name, labels));
}

std::vector<const Sample*> ParsedMetrics::all(std::string_view name) const {
  std::vector<const Sample*> out;
  for (const auto& s : samples)
    if (s.name == name) out.push_back(&s);
  return out;
}

}  // namespace natsfleet::testing
