
“
seed"fuzz0€€¨±ãŸçË:Q
config.yaml@b50cc8251b3eb26bf395104afea421609ca0d1445cf3be43593c526852a176fd5:S
rules/a.rules@25ef4962bd08bc093f5b33577ad43bd8909c77f9722d6811aabcfecbf2a5569ee:Q
tuning.yaml@beb0dc4c5c6cf1d333fdb4320684dba8623a19b05a8522461b10e6bec9b687cfAv
rules/a.rulesealert tcp any any -> any 81 (msg:"a"; sid:1; rev:1;)
# alert udp any any -> any 53 (msg:"b"; sid:2;)
D
config.yaml5vars:
  address-groups:
    HOME_NET: "[10.0.0.0/8]"
P
tuning.yamlAenable: [2]
modify:
  - {sid: 1, from: 'any 81', to: 'any 8181'}
