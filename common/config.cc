#include "common/config.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

namespace picket {
namespace {

std::vector<std::string> split_key(std::string_view key) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= key.size()) {
        size_t dot = key.find('.', start);
        if (dot == std::string_view::npos) {
            dot = key.size();
        }
        parts.emplace_back(key.substr(start, dot - start));
        start = dot + 1;
    }
    return parts;
}

std::string lower(std::string s) {
    for (auto& c : s) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

}  // namespace

bool parse_size(std::string_view text, uint64_t* out) {
    std::string s = lower(std::string(text));
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.pop_back();
    }
    if (s.empty()) {
        return false;
    }
    size_t i = 0;
    uint64_t value = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
        uint64_t next = value * 10 + static_cast<uint64_t>(s[i] - '0');
        if (next / 10 != value) {
            return false;
        }
        value = next;
        ++i;
    }
    if (i == 0) {
        return false;
    }
    std::string suffix = s.substr(i);
    while (!suffix.empty() && suffix.front() == ' ') {
        suffix.erase(0, 1);
    }
    uint64_t mult = 1;
    if (suffix.empty() || suffix == "b") {
        mult = 1;
    } else if (suffix == "kb" || suffix == "k" || suffix == "kib") {
        mult = 1024;
    } else if (suffix == "mb" || suffix == "m" || suffix == "mib") {
        mult = 1024 * 1024;
    } else if (suffix == "gb" || suffix == "g" || suffix == "gib") {
        mult = 1024ULL * 1024 * 1024;
    } else {
        return false;
    }
    if (value != 0 && mult > UINT64_MAX / value) {
        return false;
    }
    *out = value * mult;
    return true;
}

Config::Config() : root_(YAML::NodeType::Map), source_("<defaults>") {}

Config Config::load_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        throw ConfigError(path + ": cannot open config file");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return load_string(ss.str(), path);
}

Config Config::load_string(std::string_view yaml, std::string source_name) {
    Config c;
    c.source_ = std::move(source_name);
    try {
        YAML::Node n = YAML::Load(std::string(yaml));
        if (n.IsNull()) {
            n = YAML::Node(YAML::NodeType::Map);
        }
        if (!n.IsMap()) {
            throw ConfigError(c.source_ + ":1: the top level must be a mapping of keys");
        }
        c.root_ = n;
    } catch (const YAML::Exception& e) {
        throw ConfigError(c.source_ + ":" + std::to_string(e.mark.line + 1) +
                          ": bad YAML: " + e.msg);
    }
    return c;
}

void Config::set(std::string_view assignment) {
    size_t eq = assignment.find('=');
    if (eq == std::string_view::npos || eq == 0) {
        throw ConfigError("--set " + std::string(assignment) + ": expected KEY=VALUE");
    }
    std::string key(assignment.substr(0, eq));
    std::string value(assignment.substr(eq + 1));
    YAML::Node parsed;
    try {
        parsed = YAML::Load(value);
    } catch (const YAML::Exception&) {
        parsed = YAML::Node(value);
    }
    if (parsed.IsNull() && !value.empty()) {
        parsed = YAML::Node(value);
    }
    for (const auto& part : split_key(key)) {
        if (part.empty()) {
            throw ConfigError("--set " + std::string(assignment) + ": empty part in key '" + key +
                              "'");
        }
    }
    set_value(key, parsed);
}

void Config::set_value(std::string_view key, const YAML::Node& value) {
    auto parts = split_key(key);
    for (const auto& part : parts) {
        if (part.empty()) {
            throw ConfigError("config key '" + std::string(key) + "': empty part");
        }
    }
    // yaml-cpp's Node::operator= writes through to the referenced node, so handles are
    // rebound with reset() and only the final assignment writes.
    std::vector<YAML::Node> chain{root_};
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        YAML::Node child = chain.back()[parts[i]];
        if (!child.IsMap()) {
            chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
            child.reset(chain.back()[parts[i]]);
        }
        chain.push_back(child);
    }
    chain.back()[parts.back()] = value;
}

YAML::Node Config::find(std::string_view key) const {
    // Lookups go through const nodes: a non-const operator[] would insert null entries.
    YAML::Node cur = root_;
    for (const auto& p : split_key(key)) {
        if (!cur.IsMap()) {
            return YAML::Node();
        }
        const YAML::Node& ccur = cur;
        YAML::Node next = ccur[p];
        if (!next.IsDefined()) {
            return YAML::Node();
        }
        cur.reset(next);  // rebind; operator= would overwrite the node's content
    }
    return cur;
}

void Config::fail(std::string_view key, const YAML::Node& node, std::string_view what) const {
    std::string where = source_;
    if (node.Mark().line >= 0 && node.Mark().pos >= 0 && source_ != "<defaults>") {
        where += ":" + std::to_string(node.Mark().line + 1);
    }
    throw ConfigError(where + ": " + std::string(key) + ": " + std::string(what));
}

template <typename T, typename Parse>
T Config::get_or(std::string_view key, T def, Parse parse) const {
    YAML::Node n = find(key);
    if (!n.IsDefined() || n.IsNull()) {
        return def;
    }
    return parse(n);
}

bool Config::has(std::string_view key) const {
    YAML::Node n = find(key);
    return n.IsDefined() && !n.IsNull();
}

std::string Config::get_string(std::string_view key, std::string_view def) const {
    return get_or<std::string>(key, std::string(def), [&](const YAML::Node& n) -> std::string {
        if (!n.IsScalar()) {
            fail(key, n, "expected a single value");
        }
        return n.Scalar();
    });
}

int64_t Config::get_int(std::string_view key, int64_t def, int64_t min, int64_t max) const {
    return get_or<int64_t>(key, def, [&](const YAML::Node& n) -> int64_t {
        if (!n.IsScalar()) {
            fail(key, n, "expected an integer");
        }
        const std::string& s = n.Scalar();
        size_t pos = 0;
        long long v = 0;
        try {
            v = std::stoll(s, &pos, 10);
        } catch (const std::exception&) {
            fail(key, n, "expected an integer, got '" + s + "'");
        }
        if (pos != s.size()) {
            fail(key, n, "expected an integer, got '" + s + "'");
        }
        if (v < min || v > max) {
            fail(key, n,
                 "value " + s + " out of range [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
        }
        return v;
    });
}

double Config::get_double(std::string_view key, double def) const {
    return get_or<double>(key, def, [&](const YAML::Node& n) -> double {
        const std::string s = n.IsScalar() ? n.Scalar() : std::string();
        size_t pos = 0;
        double v = 0;
        try {
            v = std::stod(s, &pos);
        } catch (const std::exception&) {
            fail(key, n, "expected a number, got '" + s + "'");
        }
        if (pos != s.size() || !std::isfinite(v)) {
            fail(key, n, "expected a number, got '" + s + "'");
        }
        return v;
    });
}

bool Config::get_bool(std::string_view key, bool def) const {
    return get_or<bool>(key, def, [&](const YAML::Node& n) -> bool {
        std::string s = n.IsScalar() ? lower(n.Scalar()) : std::string();
        if (s == "yes" || s == "true" || s == "on" || s == "1") {
            return true;
        }
        if (s == "no" || s == "false" || s == "off" || s == "0") {
            return false;
        }
        fail(key, n, "expected yes or no, got '" + s + "'");
    });
}

uint64_t Config::get_size(std::string_view key, uint64_t def) const {
    return get_or<uint64_t>(key, def, [&](const YAML::Node& n) -> uint64_t {
        uint64_t v = 0;
        if (!n.IsScalar() || !parse_size(n.Scalar(), &v)) {
            fail(key, n,
                 "expected a size such as 65536, 64kb, 32mb or 1gb, got '" +
                     (n.IsScalar() ? n.Scalar() : std::string("a list or map")) + "'");
        }
        return v;
    });
}

double Config::get_seconds(std::string_view key, double def) const {
    return get_or<double>(key, def, [&](const YAML::Node& n) -> double {
        std::string s = n.IsScalar() ? lower(n.Scalar()) : std::string();
        double mult = 1;
        if (!s.empty() && (s.back() == 's' || s.back() == 'm' || s.back() == 'h')) {
            mult = s.back() == 's' ? 1 : (s.back() == 'm' ? 60 : 3600);
            s.pop_back();
        }
        size_t pos = 0;
        double v = -1;
        try {
            v = std::stod(s, &pos);
        } catch (const std::exception&) {
            pos = 0;
        }
        if (s.empty() || pos != s.size() || !std::isfinite(v) || v < 0) {
            fail(key, n,
                 "expected a duration in seconds such as 30 or 2m, got '" + n.Scalar() + "'");
        }
        return v * mult;
    });
}

std::string Config::get_choice(std::string_view key, std::string_view def,
                               std::initializer_list<std::string_view> allowed) const {
    std::string v = get_string(key, def);
    for (auto a : allowed) {
        if (v == a) {
            return v;
        }
    }
    std::string list;
    for (auto a : allowed) {
        list += (list.empty() ? "" : ", ") + std::string(a);
    }
    fail(key, find(key), "expected one of " + list + ", got '" + v + "'");
}

std::vector<std::string> Config::get_string_list(std::string_view key) const {
    using List = std::vector<std::string>;
    return get_or<List>(key, List{}, [&](const YAML::Node& n) -> List {
        List out;
        if (n.IsScalar()) {
            out.push_back(n.Scalar());
            return out;
        }
        if (!n.IsSequence()) {
            fail(key, n, "expected a list");
        }
        for (const auto& item : n) {
            if (!item.IsScalar()) {
                fail(key, item, "expected a list of plain values");
            }
            out.push_back(item.Scalar());
        }
        return out;
    });
}

}  // namespace picket
