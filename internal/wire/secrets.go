package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
)

// SecretStatus is what the leader knows of one declared secret: the
// snapshot's Secrets. It never holds a value.
type SecretStatus struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Key    string `json:"key,omitempty"`
	// AWSVersion is the source's current version id as last read (a
	// Secrets Manager VersionId, a parameter's version number).
	AWSVersion string `json:"awsVersion,omitempty"`
	// SwarmSecret is the swarm secret holding the source's latest value
	// (NAME, NAME.v2, ...), SwarmVersion the source's version it holds.
	SwarmSecret  string `json:"swarmSecret,omitempty"`
	SwarmVersion string `json:"swarmVersion,omitempty"`
	// LastSync is when the swarm was last found, or made, in step with
	// the source.
	LastSync *time.Time `json:"lastSync,omitempty"`
	// Services are those that mount a version of the secret.
	Services []string `json:"services,omitempty"`
	// Problem is why the last sync did not bring the swarm in step.
	Problem string `json:"problem,omitempty"`
}

// SecretsSyncDetail is a request to sync the declared secrets now.
type SecretsSyncDetail struct {
	RequestID   string `json:"request-id"`
	Time        string `json:"time"`
	Cluster     string `json:"cluster"`
	RequestedBy string `json:"requested-by,omitempty"`
}

// NewSecretsSyncRequest builds the request id, made at, by caller in
// region, to sync the secrets of cluster now: what secrets add and remove
// send after the core's update.
func NewSecretsSyncRequest(id string, at time.Time, caller, region, cluster string) (string, error) {
	if !ValidRequestID(id) {
		return "", fmt.Errorf("invalid request id %q", id)
	}
	account := ""
	if f := strings.Split(caller, ":"); len(f) >= 6 && f[0] == "arn" {
		account = f[4]
	}
	t := at.UTC().Format(time.RFC3339)
	detail, _ := json.Marshal(SecretsSyncDetail{RequestID: id, Time: t, Cluster: cluster, RequestedBy: caller})
	b, _ := json.Marshal(Event{
		Version: "0", ID: id, DetailType: names.RequestSecretsSync, Source: names.RequestSource,
		Account: account, Time: t, Region: region, Resources: []string{}, Detail: detail,
	})
	return string(b), nil
}

// SecretsSyncRequest reads the request in e for cluster: an error when
// it is of another shape, source or cluster.
func (e Event) SecretsSyncRequest(cluster string) (SecretsSyncDetail, error) {
	var d SecretsSyncDetail
	err := e.readRequest(names.RequestSecretsSync, "secrets sync", cluster, &d)
	return d, err
}
