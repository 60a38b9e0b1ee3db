// DetectEngine and DetectWorker: written by the lead (compiler, Hyperscan prefilter, inspect).
