// A constant table of names and the values they stand for, for the keyword and config
// parsers (operators, threshold types, track modes). Parse time only (control thread).
#pragma once

#include <cstddef>
#include <string_view>

namespace picket::sensor::detect {

template <class E>
struct Named {
    std::string_view name;
    E value;
};

// The value `name` stands for in `table`; false, *out untouched, when it is not there.
template <class E, size_t N>
bool find_named(const Named<E> (&table)[N], std::string_view name, E* out) {
    for (const Named<E>& n : table) {
        if (n.name == name) {
            *out = n.value;
            return true;
        }
    }
    return false;
}

}  // namespace picket::sensor::detect
