# DNS, TLS, SSH and FTP app-layer parsers (sensor/applayer/dns, sensor/applayer/tls,
# sensor/applayer/ssh, sensor/applayer/ftp).
picket_add_fuzzer(dns_fuzz SOURCES dns_fuzz.cc LIBS picket_dns)
picket_add_fuzzer(tls_fuzz SOURCES tls_fuzz.cc LIBS picket_tls)
picket_add_fuzzer(ssh_fuzz SOURCES ssh_fuzz.cc LIBS picket_ssh)
picket_add_fuzzer(ftp_fuzz SOURCES ftp_fuzz.cc LIBS picket_ftp)
add_dependencies(fuzzers dns_fuzz tls_fuzz ssh_fuzz ftp_fuzz)
