package a2aserve

import (
	"github.com/a2aproject/a2a-go/a2a"
)

// ProtocolVersion is the A2A protocol version the cards declare.
const ProtocolVersion = "0.3.0"

// BearerScheme is the name of the security scheme of a card whose server
// authenticates: a bearer token (an API token or an OpenID Connect ID
// token).
const BearerScheme = "bearer"

// Card returns the agent card of the agent named name (its tool name),
// served at url; bearer says the endpoint wants a bearer token. The
// second result is false for an agent the server does not offer.
func (s *Server) Card(name, url string, bearer bool) (*a2a.AgentCard, bool) {
	a, ok := s.agents[name]
	if !ok {
		return nil, false
	}
	card := &a2a.AgentCard{
		Name:               a.Tool.Name,
		Description:        a.Tool.Description,
		URL:                url,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion:    ProtocolVersion,
		Version:            s.version,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID: a.Tool.Name, Name: a.Tool.Name, Description: a.Tool.Description, Tags: []string{"vigil"},
		}},
	}
	if bearer {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{BearerScheme: a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"}}
		card.Security = []a2a.SecurityRequirements{{BearerScheme: a2a.SecuritySchemeScopes{}}}
	}
	return card, true
}
