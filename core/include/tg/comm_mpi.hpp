// The MPI communicator (libtg_comm_mpi, built where an MPI implementation is found; Debian's OpenMPI here).
#pragma once

#include <memory>

#include "tg/comm.hpp"

namespace tg {

// MPI_COMM_WORLD (MPI initialized on first call, finalized at exit). Under `mpirun -np N` each process is one rank;
// run alone, a group of one.
std::unique_ptr<Communicator> mpi_world();

}  // namespace tg
