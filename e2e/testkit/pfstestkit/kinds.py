"""The names the end-to-end tests address things by, one place each: the project's kinds as kubectl
resources and where the client toolbox mounts OrangeFS."""

OFS = "orangefsclusters.pfslayout.io"
LP = "layoutpolicies.pfslayout.io"
CC = "costcalibrations.pfslayout.io"
# The client toolbox's mount point (the operator's manifests put it there).
MOUNT = "/mnt/orangefs"
