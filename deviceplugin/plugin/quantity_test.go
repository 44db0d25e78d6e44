package plugin

import "k8s.io/apimachinery/pkg/api/resource"

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
