"""CostCalibration's pure logic: its typed spec, the probe plan (grid → directories → probe jobs), the
probe MPIJob and its result channel, the fit's publication and the status (docs/operator.md,
"CostCalibration")."""
