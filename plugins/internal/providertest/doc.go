// Package providertest helps test model providers against local HTTP
// servers that speak a provider's real wire format.
//
// A [Server] answers each request with the next scripted [Reply] and
// records what it received, so a test can assert the exact JSON body a
// provider sent. Server-sent event bodies are written one event at a time
// with a flush after each, the way real APIs stream, and a reply can hold
// the connection open to exercise cancellation. [Golden] compares bytes
// with a file under testdata/ and rewrites it when the test binary runs
// with -update.
package providertest
