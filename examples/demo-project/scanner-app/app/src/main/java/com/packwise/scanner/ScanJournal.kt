// Offline scan journal with atomic writes (tmp + fsync + rename) and corrupt-file recovery.
