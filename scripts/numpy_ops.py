#!/usr/bin/env python3
"""examples/ops_bench.rs's table in NumPy: scripts/ops_ref.py --backend numpy (same options)."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ops_ref import main

main("numpy")
