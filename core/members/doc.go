// Package members is who is in a comm and how a comm's ranks map to the processes that carry
// them: the explicit layers between the algorithms and a process transport.
//
//   - Proc is a process transport and the comms that use it: comms shrunk from one another share
//     one, and it is closed with the last of them.
//   - View is one comm's window onto a Proc: its members, renumbered 0..k-1 (a shrunk comm is
//     some of the processes), and with replication their grouping into nodes. The algorithms
//     address nodes; a View sends to every live replica of a node, takes the first copy from any
//     of them ("Kylix: A Sparse Allreduce for Commodity Clusters", §V, packet racing), and names
//     ranks in its errors and statistics as the comm numbers them.
//   - Resize agrees with the other live members on who failed, checks that they hold a majority,
//     and admits the joiners the job's join server holds (resize.go; Zhang and Qiu, "Efficient,
//     Fault-tolerant and Elastic Allreduce Framework for Iterative Algorithms" §5-6); Shrink is
//     a resize that admits nobody (ULFM's MPI_Comm_shrink).
//
// Every capability of the process transport (racing, late sends, quiescing, same-host links)
// reaches every comm through its View, shrunk or not.
package members
