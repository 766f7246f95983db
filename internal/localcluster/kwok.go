package localcluster

import "github.com/driftwatch/driftwatch/internal/localcluster/kwokstages"

// kwokStages returns the stage definitions written to kwok-stages.yaml.
func kwokStages() []byte { return kwokstages.YAML() }
