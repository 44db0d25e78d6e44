package framework

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// GetTableRow returns the one row `kubectl get` shows for the object at
// the API path, by column name.
func GetTableRow(ctx context.Context, t testing.TB, kube kubernetes.Interface, path string) map[string]any {
	t.Helper()
	table := GetTable(ctx, t, kube, path)
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
		t.Fatalf("the table of %s: %+v, want one row with a cell per column", path, table)
	}
	row := make(map[string]any, len(table.ColumnDefinitions))
	for i, col := range table.ColumnDefinitions {
		row[col.Name] = table.Rows[0].Cells[i]
	}
	return row
}
