//go:build !unix

package mcp_test

const hostHelperEnv = "VIGIL_MCP_HOST_HELPER"

func hostHelper() int { return 2 }
