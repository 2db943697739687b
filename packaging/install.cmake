# `cmake --install BUILD --prefix P`: the binaries, the shipped data and example specs, the docs and a modulefile
# for Lmod and Tcl environment-modules. Nothing installed names the build tree or the prefix: the binaries find
# their siblings (common/executable.h OwnBinDir) and the data (P/share/ladder) relative to themselves, the
# modulefiles find P from their own path, and no RUNPATH is written (every library comes from the system).
# `--strip` also drops the debug information, which names the source and build directories.
include(GNUInstallDirs)
set(CMAKE_SKIP_INSTALL_RPATH ON)
install(TARGETS ladder-train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET ladder)
  install(TARGETS ladder ladder-server ladder-worker ladder-stage RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES data/digits.csv.gz data/demo.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/ladder)
install(DIRECTORY data/specs DESTINATION ${CMAKE_INSTALL_DATADIR}/ladder)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(LADDER_VERSION ${PROJECT_VERSION})
configure_file(packaging/modulefiles/ladder.lua.in ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION}.lua @ONLY)
configure_file(packaging/modulefiles/ladder.tcl.in ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION} @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION}.lua ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/modulefiles/ladder)
