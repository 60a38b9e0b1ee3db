// Meta keywords: msg sid rev gid classtype priority reference metadata target. They only
// fill Rule fields; nothing here is evaluated per packet. classtype is resolved against
// classification.config by the parser once all options are read (ParseState has no table).
#include "sensor/detect/keywords/keywords.h"

#include <cstdint>
#include <string>

#include "common/strings.h"

namespace picket::sensor::detect::keywords {
namespace {

// Strips one pair of surrounding quotes (if present) and resolves backslash escapes (\" \\ \;
// and any other \x as x, like Suricata's msg).
bool unquote(std::string_view v, std::string* out, std::string* error, const char* kw) {
    if (!v.empty() && v.front() == '"') {
        if (v.size() < 2 || v.back() != '"') {
            *error = std::string(kw) + ": unterminated quoted string";
            return false;
        }
        // The closing quote must not be escaped: count the backslashes before it.
        size_t bs = 0;
        for (size_t i = v.size() - 1; i > 1 && v[i - 1] == '\\'; --i) {
            ++bs;
        }
        if (bs % 2 == 1) {
            *error = std::string(kw) + ": unterminated quoted string";
            return false;
        }
        v = v.substr(1, v.size() - 2);
    }
    out->clear();
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) {
            ++i;
        }
        out->push_back(v[i]);
    }
    return true;
}

bool need_value(const char* kw, std::string_view value, bool has_value, std::string* error) {
    if (!has_value || trim_blanks(value).empty()) {
        *error = std::string(kw) + ": needs a value";
        return false;
    }
    return true;
}

bool number(const char* kw, std::string_view value, bool has_value, bool positive, uint32_t* out,
            std::string* error) {
    if (!need_value(kw, value, has_value, error)) {
        return false;
    }
    if (!strings::parse_u32(strings::unquote(trim_blanks(value)), out) || (positive && *out == 0)) {
        *error = std::string(kw) + ": must be a " + (positive ? "positive " : "") +
                 "number, got '" + std::string(value) + "'";
        return false;
    }
    return true;
}

}  // namespace

bool parse_msg(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!has_value) {
        *error = "msg: needs a value";
        return false;
    }
    return unquote(trim_blanks(value), &st.rule->msg, error, "msg");
}

bool parse_sid(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    uint32_t sid = 0;
    if (!number("sid", value, has_value, true, &sid, error)) {
        return false;
    }
    if (st.rule->sid != 0) {
        *error = "sid: given twice";
        return false;
    }
    st.rule->sid = sid;
    return true;
}

bool parse_rev(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return number("rev", value, has_value, false, &st.rule->rev, error);
}

bool parse_gid(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return number("gid", value, has_value, false, &st.rule->gid, error);
}

bool parse_classtype(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!need_value("classtype", value, has_value, error)) {
        return false;
    }
    if (!st.rule->classtype.empty()) {
        *error = "classtype: given twice";
        return false;
    }
    std::string name;
    if (!unquote(trim_blanks(value), &name, error, "classtype")) {
        return false;
    }
    st.rule->classtype = std::string(trim_blanks(name));
    return true;
}

bool parse_priority(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    uint32_t p = 0;
    if (!number("priority", value, has_value, true, &p, error)) {
        return false;
    }
    if (p > 255) {
        *error = "priority: must be 1..255, got '" + std::string(trim_blanks(value)) + "'";
        return false;
    }
    st.rule->priority = static_cast<int>(p);
    st.rule->priority_set = true;
    return true;
}

bool parse_reference(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!need_value("reference", value, has_value, error)) {
        return false;
    }
    std::string text;
    if (!unquote(trim_blanks(value), &text, error, "reference")) {
        return false;
    }
    const size_t comma = text.find(',');
    if (comma == std::string::npos) {
        *error = "reference: expected 'system,id', got '" + std::string(trim_blanks(value)) + "'";
        return false;
    }
    std::string_view sys = trim_blanks(std::string_view(text).substr(0, comma));
    std::string_view id = trim_blanks(std::string_view(text).substr(comma + 1));
    if (sys.empty() || id.empty()) {
        *error = "reference: expected 'system,id', got '" + std::string(trim_blanks(value)) + "'";
        return false;
    }
    st.rule->references.emplace_back(std::string(sys), std::string(id));
    return true;
}

bool parse_metadata(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!need_value("metadata", value, has_value, error)) {
        return false;
    }
    std::string_view v = trim_blanks(value);
    size_t start = 0;
    for (size_t i = 0; i <= v.size(); ++i) {
        if (i == v.size() || v[i] == ',') {
            std::string_view item = trim_blanks(v.substr(start, i - start));
            start = i + 1;
            if (!item.empty()) {
                st.rule->metadata.emplace_back(item);
            }
        }
    }
    return true;
}

bool parse_target(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!need_value("target", value, has_value, error)) {
        return false;
    }
    std::string_view v = trim_blanks(value);
    if (v == "src_ip") {
        st.rule->target = Rule::Target::kSrc;
    } else if (v == "dest_ip") {
        st.rule->target = Rule::Target::kDst;
    } else {
        *error = "target: must be src_ip or dest_ip, got '" + std::string(v) + "'";
        return false;
    }
    return true;
}

}  // namespace picket::sensor::detect::keywords
