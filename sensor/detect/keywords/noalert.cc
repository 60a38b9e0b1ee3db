// noalert: the rule matches (its flowbits and other actions apply) but never raises an alert.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_noalert(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (has_value && !trim_blanks(value).empty()) {
        *error = "noalert: takes no value";
        return false;
    }
    st.rule->noalert = true;
    return true;
}

}  // namespace picket::sensor::detect::keywords
