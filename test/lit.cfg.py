# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "FOLIO"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.folio_obj_root, "test")
# GoogleTest sources and helper inputs are not lit tests.
config.excludes = ["unittests", "lib", "Inputs", "CMakeLists.txt",
                   "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.folio_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["folio-opt", "folioc", "folio-run", "folio-bench", "folio-generate"], tool_dirs)
# folio-serve is built only where cpp-httplib and nlohmann-json are.
if os.path.exists(os.path.join(config.folio_tools_dir, "folio-serve")):
    config.available_features.add("folio-serve")
    llvm_config.add_tool_substitutions(["folio-serve", "folio-model-stub"],
                                       tool_dirs)
config.substitutions.append(("%models", os.path.join(config.folio_src_root, "models", "zoo")))
config.substitutions.append(("%folio_src", config.folio_src_root))
config.substitutions.append(("%folio_build", config.folio_obj_root))
# A build with the CUDA toolkit compiles generated kernels with its nvcc.
if getattr(config, "folio_nvcc", ""):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%nvcc", config.folio_nvcc))
