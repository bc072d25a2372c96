# `pip install ./python`: pure Python over libloom.so (ctypes), nothing to compile or download,
# so it installs offline. The library comes from `make install` (or LOOM_LIBRARY=path/libloom.so).
from setuptools import setup

setup(
    name="loom",
    version="0.1.0",
    description="Python bindings for Loom's C ABI (libloom.so): load GGUF models, tokenize, "
    "decode, read logits and generate",
    packages=["loom"],
    python_requires=">=3.9",
)
