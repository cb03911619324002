"""OrangeFSCluster: the typed spec (`spec`), the FsConf it describes (`fsconf`), the labels and
annotations of its children (`meta`), their builders (`objects`, `desired`), and the decisions of a
reconcile (`decisions`: apply or refuse; `status`: phase, conditions, endpoints, Events). Pure."""
