package assistant

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// schemaURI is the data model resource of a pipeline.
const schemaURI = "kgsync://schema/"

// defaultPlaybook is served as prompt "playbook" when the config names
// no file (assistant.playbook).
const defaultPlaybook = `# Playbook: answering from the kgsync graph

1. Read the data model first (tool schema, or resource kgsync://schema/{pipeline}):
   anchors, attributes, links, which attributes are embeddable.
2. Pick the tool by the question's kind:
   - "how many …", "show all …", "list …", "which X have/require Y": rows.
     State the total it returns; when complete=false, page with offset or
     say the list continues. Never count from search hits.
   - a question in words about a table's text ("what does the FAQ say about
     masks"): search with anchor and attribute set to the embeddable
     attribute (e.g. anchor=faq attribute=question), then rows or neighbors
     for the row's other attributes and links.
   - a question about documents: search (expand=true for the full clause,
     its MANDATORY companions and definitions); lookup when the question
     names an address ("6.2.2", "Article 7(3)"); term for a definition;
     neighbors to follow a cross-reference.
   - what none of these express, on a Memgraph sink: cypher (read-only).
3. Answer only from what the tools returned, and cite ids: row ids
   (hs_code:0701), chunk and element ids (docs:rfc7239.txt › 5 › 5.1).
4. When search declines, say nothing relevant was found rather than guess.
   When it answers with confidence "low", use the hits but say what they
   do not state (its reason and missing words).
`

func (s *Server) addResources() {
	for _, p := range s.opts.Pipelines {
		name := p.Name
		s.mcp.AddResource(&mcp.Resource{
			URI:         schemaURI + name,
			Name:        "schema-" + name,
			Title:       "Data model of pipeline " + name,
			Description: "The data model tables of pipeline " + name + " (anchors, attributes, links, vector indexes, counts), as `kgsync schema` prints them: include them in the prompt.",
			MIMEType:    "text/markdown",
		}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			p, err := s.pipelineFor(strings.TrimPrefix(req.Params.URI, schemaURI))
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			doc, err := p.Describe(ctx)
			if err != nil {
				return nil, fmt.Errorf("schema of %s: %w", p.Name, err)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: doc.Markdown()}}}, nil
		})
	}
}

func (s *Server) addPrompts() {
	s.mcp.AddPrompt(&mcp.Prompt{
		Name:        "playbook",
		Title:       "How to answer from the kgsync graph",
		Description: "Which tools to call in which order for which kind of question, with the data model of the served pipelines.",
	}, func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		text, err := s.readPlaybook()
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		b.WriteString(text)
		for _, p := range s.opts.Pipelines {
			doc, err := p.Describe(ctx)
			if err != nil {
				return nil, fmt.Errorf("schema of %s: %w", p.Name, err)
			}
			b.WriteString("\n\n")
			b.WriteString(doc.Markdown())
		}
		return &mcp.GetPromptResult{
			Description: "Playbook and data model",
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}},
		}, nil
	})
}
