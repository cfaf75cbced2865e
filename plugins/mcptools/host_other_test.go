//go:build !unix

package mcptools_test

const hostHelperEnv = "VIGIL_MCP_HOST_HELPER"

func hostHelper() int { return 2 }
