# TCP stream reassembly (sensor/stream): synthetic segments through one tracker with small
# memcaps. Included by CMakeLists.txt in this folder.
picket_add_fuzzer(stream_fuzz SOURCES stream_fuzz.cc LIBS picket_stream picket_flow picket_decode)
add_dependencies(fuzzers stream_fuzz)
