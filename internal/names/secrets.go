package names

// The core's declared secrets (spec.Secrets) reach the managers' leader
// through a Systems Manager parameter of the core stack: updated with the
// stack, and with it rolled back, it always says what the managers' IAM
// permits. A request (RequestSecretsSync) tells the leader to read it at
// once after a change.
const (
	// ResourceSecretsPolicy is the managers' permission to read the
	// declared sources, and nothing else.
	ResourceSecretsPolicy = "SecretsPolicy"
	// ResourceSecretsDeclaration is the parameter holding the declaration.
	ResourceSecretsDeclaration = "SecretsDeclaration"
	// RequestSecretsSync asks the leader to sync the secrets now.
	RequestSecretsSync = "SecretsSyncRequest"
)

// SecretsParameter is the name of the parameter holding the declared
// secrets of cluster (JSON: [{"name","from","key"}]).
func SecretsParameter(cluster string) string { return "/clusterctl/" + cluster + "/secrets" }

// Labels of a swarm secret the leader made: its declared name, the source
// and the source's version it holds. A swarm secret without
// SecretLabelManaged is not the leader's, and is never removed by it.
const (
	SecretLabelManaged = "clusterctl.secret"
	SecretLabelSource  = "clusterctl.secret.source"
	SecretLabelKey     = "clusterctl.secret.key"
	SecretLabelVersion = "clusterctl.secret.version"
)
