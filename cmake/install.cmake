# `cmake --install BUILD_DIR [--prefix DIR]` and `cpack -G DEB` (run in the
# build folder): the devmap command and what it starts.
#   <prefix>/bin/devmap                      the coordinator
#   <prefix>/libexec/devmap/                 worker_cpu, worker_gpu (CUDA
#                                            builds), devmap_run_guard
#   <prefix>/share/devmap/configs/           the example configs
#   <prefix>/share/doc/devmap/               README.md, docs/*.md
# The build folder keeps its own layout (bin/coordinator beside the
# workers); both are found by coordinator/util/program_paths.h.

# Installed under the command's name; the build folder's bin/coordinator
# stays what tests and scripts/launch.sh run.
install(PROGRAMS $<TARGET_FILE:coordinator> DESTINATION ${CMAKE_INSTALL_BINDIR} RENAME devmap COMPONENT devmap)
set(_devmap_helpers worker_cpu devmap_run_guard)
if(TARGET worker_gpu)
  list(APPEND _devmap_helpers worker_gpu)
endif()
# Installed programs keep the run paths of the libraries they link outside
# the system folders (OpenBLAS's pthread variant, CUDA's libraries), as the
# build's do: the same libraries, not whichever a system alternative picks.
set_target_properties(${_devmap_helpers} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS ${_devmap_helpers} RUNTIME DESTINATION ${DEVMAP_INSTALL_HELPER_DIR} COMPONENT devmap)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/devmap/configs COMPONENT devmap)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT devmap)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT devmap
        FILES_MATCHING PATTERN "*.md")

# The Debian package: `cd build/<preset> && cpack -G DEB` writes
# devmap_<version>_<arch>.deb. Depends names the Debian packages of the
# shared libraries the programs link (readelf -d build/<preset>/bin/*,
# dpkg -S). worker_gpu's cuBLAS and cuDNN come from NVIDIA's CUDA, which
# Debian main does not package: a CUDA build's package needs them at the
# paths it was built with.
set(CPACK_PACKAGE_NAME devmap)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR devmap)
set(CPACK_PACKAGE_CONTACT "devmap maintainers <devmap@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Multi-process neural network executor across CPU and GPU devices")
# One string: CPack wraps it into the control file's description lines.
set(CPACK_PACKAGE_DESCRIPTION
    "devmap trains and runs neural networks described in a YAML config, one worker process per device (CPU, GPU), \
placed by a device map: devmap train CONFIG, devmap plan CONFIG, devmap calibrate CONFIG.")
if(TARGET worker_gpu)
  string(APPEND CPACK_PACKAGE_DESCRIPTION " The GPU worker needs NVIDIA's cuBLAS and cuDNN (not in this package's Depends).")
endif()
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(_devmap_depends "libc6, libstdc++6, libgcc-s1, libgomp1, libopenblas0-pthread, libdnnl2, libzmq5, libyaml-cpp0.7, zlib1g")
if(DEVMAP_MPI)
  string(APPEND _devmap_depends ", libopenmpi3")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS ${_devmap_depends})
# The Fashion-MNIST files the example configs read.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "dataset-fashion-mnist")
include(CPack)
