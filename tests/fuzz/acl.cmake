# acl.rules parser and the 5-tuple classifier (sensor/filter). Included by CMakeLists.txt in
# this folder.
picket_add_fuzzer(acl_fuzz SOURCES acl_fuzz.cc LIBS picket_filter)
add_dependencies(fuzzers acl_fuzz)
