# DNS and TLS app-layer parsers (sensor/applayer/dns, sensor/applayer/tls).
picket_add_fuzzer(dns_fuzz SOURCES dns_fuzz.cc LIBS picket_dns)
picket_add_fuzzer(tls_fuzz SOURCES tls_fuzz.cc LIBS picket_tls)
add_dependencies(fuzzers dns_fuzz tls_fuzz)
