package web

import "github.com/llmkernels/kernels/hermitcrab/web/jsx"

// compileShell turns the LLM's JSX into the code the page evaluates; its
// error gives line and column in the LLM's source, for the LLM.
func compileShell(source string) (string, error) {
	r, err := jsx.Compile(source)
	if err != nil {
		return "", err
	}
	return r.Code, nil
}
