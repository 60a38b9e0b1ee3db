// Configuration: a YAML document (sensor.yaml) plus dotted --set KEY=VALUE overrides, read
// through typed getters whose errors name the file, line and key. Built once at start-up and
// then read-only; setup code only (getters throw ConfigError).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace picket {

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Config {
public:
    Config();
    // Parses a YAML file; throws ConfigError("FILE:LINE: ...") on bad YAML.
    static Config load_file(const std::string& path);
    static Config load_string(std::string_view yaml, std::string source_name = "<string>");

    // Applies "a.b.c=value"; the value is parsed as YAML (so lists and numbers work).
    // Throws ConfigError when the text has no '=' or an empty key.
    void set(std::string_view assignment);
    // Sets one key to a value as given (no YAML parsing: paths and expressions stay intact).
    void set_value(std::string_view key, const YAML::Node& value);

    bool has(std::string_view key) const;
    std::string get_string(std::string_view key, std::string_view def) const;
    int64_t get_int(std::string_view key, int64_t def, int64_t min = INT64_MIN,
                    int64_t max = INT64_MAX) const;
    double get_double(std::string_view key, double def) const;
    bool get_bool(std::string_view key, bool def) const;
    // Sizes accept plain bytes or suffixes kb, mb, gb (Suricata's memcap style), any case.
    uint64_t get_size(std::string_view key, uint64_t def) const;
    // Durations in seconds; accepts plain numbers or suffixes s, m, h.
    double get_seconds(std::string_view key, double def) const;
    // One of the allowed words; error lists them.
    std::string get_choice(std::string_view key, std::string_view def,
                           std::initializer_list<std::string_view> allowed) const;
    std::vector<std::string> get_string_list(std::string_view key) const;

    const std::string& source() const { return source_; }
    const YAML::Node& root() const { return root_; }

private:
    YAML::Node find(std::string_view key) const;
    [[noreturn]] void fail(std::string_view key, const YAML::Node& node,
                           std::string_view what) const;
    // def when the key is absent or null; otherwise parse(node), which fails on a bad value.
    template <typename T, typename Parse>
    T get_or(std::string_view key, T def, Parse parse) const;

    YAML::Node root_;
    std::string source_;
};

// Parses "64mb", "1gb", "1024" into bytes; returns false on anything else.
bool parse_size(std::string_view text, uint64_t* out);

}  // namespace picket
