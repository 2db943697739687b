# `cmake --install BUILD --prefix P`: the binaries, the shipped data and example specs, the docs and a modulefile
# for Lmod and Tcl environment-modules. Nothing installed names the build tree or the prefix: the binaries find
# their siblings (common/executable.h OwnBinDir) and the data (P/share/ladder) relative to themselves, the
# modulefiles find P from their own path, and no RUNPATH is written (every library comes from the system).
# `--strip` also drops the debug information, which names the source and build directories.
include(GNUInstallDirs)
set(CMAKE_SKIP_INSTALL_RPATH ON)
# A shared tree, whatever the installing shell's umask: CMake makes directories through the umask, so under an
# admin's umask 077 the users the modulefile is for could not enter bin/ or share/. Every directory this install
# makes (and ladder's own under share/) is opened to 0755 at the end; one that was already there is left alone.
set(_ladder_made_dirs . ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_DATAROOTDIR} ${CMAKE_INSTALL_DATADIR}
    ${CMAKE_INSTALL_DATAROOTDIR}/doc ${CMAKE_INSTALL_DATADIR}/modulefiles)
set(_ladder_own_dirs ${CMAKE_INSTALL_DATADIR}/ladder ${CMAKE_INSTALL_DOCDIR} ${CMAKE_INSTALL_DATADIR}/modulefiles/ladder)
install(CODE "
  set(_ladder_new_dirs \"\")
  foreach(d ${_ladder_made_dirs})
    if(NOT EXISTS \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${d}\")
      list(APPEND _ladder_new_dirs \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${d}\")
    endif()
  endforeach()")
install(TARGETS ladder-train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET ladder-make-hdf5)  # built where HDF5 is found (trainer/CMakeLists.txt)
  install(TARGETS ladder-make-hdf5 RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET ladder)
  install(TARGETS ladder ladder-server ladder-worker ladder-stage ladder-detach RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES data/digits.csv.gz data/demo.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/ladder)
install(DIRECTORY data/specs DESTINATION ${CMAKE_INSTALL_DATADIR}/ladder)
# The Charliecloud image builder (docs/guide/containers.md): `P/share/ladder/ch-image.sh P IMAGE` from the install.
install(PROGRAMS scripts/ch-image.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/ladder)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# docs/ keeps its place beside the README, so that the README's links (docs/guide/...) and the guide's
# (../../README.md) resolve in the installed tree as in the repository.
install(DIRECTORY docs DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(LADDER_VERSION ${PROJECT_VERSION})
configure_file(packaging/modulefiles/ladder.lua.in ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION}.lua @ONLY)
configure_file(packaging/modulefiles/ladder.tcl.in ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION} @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION}.lua ${CMAKE_BINARY_DIR}/modulefiles/${PROJECT_VERSION}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/modulefiles/ladder)
install(CODE "
  foreach(d ${_ladder_own_dirs})
    file(CHMOD_RECURSE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${d}\" DIRECTORY_PERMISSIONS
         OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  endforeach()
  if(_ladder_new_dirs)
    file(CHMOD \${_ladder_new_dirs} DIRECTORY_PERMISSIONS
         OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  endif()")
