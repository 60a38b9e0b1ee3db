# sensor/applayer/http fuzz target (included by tests/fuzz/CMakeLists.txt).
picket_add_fuzzer(http_fuzz SOURCES http_fuzz.cc LIBS picket_http)
add_dependencies(fuzzers http_fuzz)
