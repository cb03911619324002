"""LayoutPolicy's pure logic: each rule's decision and hints (`rules`), conditions and Events (`status`),
the labels of the objects a policy owns (`children`)."""
