"""Pure builders of an OrangeFSCluster's Kubernetes objects from its typed spec, and the reconciliation
decisions (what to apply, what to refuse, what the status says)."""
