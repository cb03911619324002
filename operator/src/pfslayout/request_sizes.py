"""CostCalibration's default request sizes (spec.grid.requestSizes), the `standard` profile's.

No imports, so the kinds' spec parser takes them without loading numpy and the calibration package (0.15 s
against 0.43 s), as pfslayout.images does for the default images. crds/kinds.py keeps the CRD's literal;
operator/tests/unit/test_calibration_profiles.py checks it equals the `standard` profile, which takes these.

32 KiB: on 4 or 8 servers 1-DH splits it into pieces below OrangeFS's small-I/O limit (16 KiB) and 2-D
(g = n/2 resp. n/4) into pieces of 16 KiB — the contrast that identifies v_small_write (docs/cost-model.md
"Small writes"); without it the 4-server product loop missed 16 KiB writes by 48%.
"""

DEFAULT_SIZES = (4096, 32768, 65536, 1 << 20, 4 << 20)
