"""OrangeFS configuration as pure functions: fs.conf, pvfs2tab, FS IDs, aliases, handle ranges and the
server's storage-init and start commands. Nothing here talks to Kubernetes or starts a process."""
