package names

// InterruptionPrefix is where an agent confirms, from its own instance
// metadata, that EC2 warned its instance of a spot interruption or
// recommended rebalancing it: one object per instance, at
// InterruptionPrefix/<aws:userid> (the role's id, a colon, the instance
// id), which only that instance's session of the agents' role may write
// (its IAM policy names the key by the aws:userid policy variable; the
// bucket policy denies the prefix's writes to every other principal).
const InterruptionPrefix = "interruptions"

// Interrupted (under ControlPrefix) holds the leader's record of each
// instance it drained on a confirmed warning, Interrupted/<instance id>,
// so that any leader sets the nodes active again when the instance
// outlives the warning.
const Interrupted = "interrupted"
