// isdataat (Suricata 7 detect-isdataat.c): [!]N[,relative][,rawbytes].
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

int IsdataatOption::eval(const EvalInput& in, uint32_t cursor) const {
    const bool var = p.n.is_var();
    uint64_t n = static_cast<uint64_t>(p.n.get(in.scratch));
    if (var && n >= 100000000) {
        return p.negated ? 1 : 0;
    }
    // No match on an absolute / literal isdataat cannot be fixed by a later occurrence of a
    // previous content, so it stops the evaluation (Suricata's no_match_discontinue).
    const int fail = var ? 0 : -1;
    if (p.relative) {
        if (static_cast<uint64_t>(cursor) + n > in.len) {
            return p.negated ? 1 : fail;
        }
        return p.negated ? 0 : 1;
    }
    if (n < in.len) {
        return p.negated ? fail : 1;
    }
    return p.negated ? 1 : fail;
}

uint64_t IsdataatOption::hash() const {
    Hasher h;
    h.add(static_cast<uint64_t>(p.n.value)).add(static_cast<uint64_t>(p.n.var));
    h.add(p.negated).add(p.relative);
    return h.h;
}

}  // namespace payload

namespace keywords {

bool parse_isdataat(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    auto toks = payload::split_args(value);
    if (!has_value || toks[0].empty()) {
        *error = "isdataat: needs a value";
        return false;
    }
    auto opt = std::make_unique<payload::IsdataatOption>();
    auto& p = opt->p;
    std::string_view n = toks[0];
    if (n.front() == '!') {
        p.negated = true;
        n = trim_blanks(n.substr(1));
    }
    if (!payload::parse_var_value(st, n, 0, 65535, &p.n)) {
        *error = "isdataat: invalid value '" + std::string(toks[0]) +
                 "' (expected [!]N with N from 0 to 65535 or a byte_extract/byte_math variable)";
        return false;
    }
    for (size_t i = 1; i < toks.size(); ++i) {
        if (toks[i] == "relative") {
            p.relative = true;
        } else if (toks[i] != "rawbytes") {
            *error = "isdataat: unknown option '" + std::string(toks[i]) + "'";
            return false;
        }
    }
    payload::append_option(st, std::move(opt));
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
