// Package planning chooses the butterfly's shape: the Topology of a degree list, the power-law
// model of how dense each layer's index sets are ("Kylix: A Sparse Allreduce for Commodity
// Clusters", §IV, Prop. 4.1), the degrees that keep every message above the efficient packet
// size (PlanDegrees, Table I), the time model that prices a degree list on measured links and
// compute rates (PredictTime, PlanDegreesByCost), and the link model fitted to probe round trips
// (Links). It measures nothing over the network itself: core's Comm runs the probes.
package planning
