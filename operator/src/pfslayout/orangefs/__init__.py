"""OrangeFS configuration as pure functions: fs.conf, pvfs2tab, handle ranges and the server's
storage-init and start commands (server aliases, DNS names and FS IDs are derived in pfslayout.naming).
Nothing here talks to Kubernetes or starts a process."""
