package v1

// Plugin renders a Kustomization with a config-management plugin: a
// sidecar of render-controller that answers on a unix socket
// (docs/design/plugins.md). The fields are Argo CD's `plugin` source,
// field for field.
type Plugin struct {
	// Name names the plugin: the sidecar announcing itself as
	// <name>.sock in render-controller's --plugin-dir. Without it the
	// plugin is discovered, as Argo CD does: the one plugin whose
	// discover rule matches a file in spec.path renders it, and none or
	// several fail the render naming them.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// Env is handed to the plugin; a command plugin sees each entry as
	// ARGOCD_ENV_<name>, as in Argo CD.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []PluginEnv `json:"env,omitempty"`

	// Parameters are the plugin's parameters; each must be one the plugin
	// announces.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Parameters []PluginParameter `json:"parameters,omitempty"`
}

// PluginEnv is one environment variable for a plugin.
type PluginEnv struct {
	// +kubebuilder:validation:Pattern=`^[_a-zA-Z][_a-zA-Z0-9]*$`
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// PluginParameter is one parameter for a plugin: a string, an array of
// strings or a map of strings (at most one).
// +kubebuilder:validation:XValidation:rule="(has(self.string) ? 1 : 0) + (has(self.array) ? 1 : 0) + (has(self.map) ? 1 : 0) <= 1",message="a plugin parameter is one of string, array and map"
type PluginParameter struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	String *string `json:"string,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=4096
	Array []string `json:"array,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	Map map[string]string `json:"map,omitempty"`
}
