package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// securityErrors answer the security APIs: ACLs, SCRAM credentials and
// client quotas (the Alter ones forwarded to the active controller, the
// Describe ones answered from a broker's image).
var securityErrors = map[kmsg.Key]errorAnswer{
	kmsg.CreateACLs: answer(func(r *kmsg.CreateACLsRequest, resp *kmsg.CreateACLsResponse, f failure) {
		resp.Results = each(r.Creations, func(kmsg.CreateACLsRequestCreation) kmsg.CreateACLsResponseResult {
			rr := kmsg.NewCreateACLsResponseResult()
			rr.ErrorCode, rr.ErrorMessage = f.code, f.message()
			return rr
		})
	}),
	kmsg.DeleteACLs: answer(func(r *kmsg.DeleteACLsRequest, resp *kmsg.DeleteACLsResponse, f failure) {
		resp.Results = each(r.Filters, func(kmsg.DeleteACLsRequestFilter) kmsg.DeleteACLsResponseResult {
			rr := kmsg.NewDeleteACLsResponseResult()
			rr.ErrorCode, rr.ErrorMessage = f.code, f.message()
			return rr
		})
	}),
	kmsg.DescribeACLs: answer(func(_ *kmsg.DescribeACLsRequest, resp *kmsg.DescribeACLsResponse, f failure) {
		resp.ErrorCode, resp.ErrorMessage = f.code, f.message()
	}),
	kmsg.AlterUserSCRAMCredentials: answer(func(r *kmsg.AlterUserSCRAMCredentialsRequest, resp *kmsg.AlterUserSCRAMCredentialsResponse, f failure) {
		seen := map[string]bool{}
		result := func(user string) {
			if seen[user] {
				return
			}
			seen[user] = true
			rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			rr.User, rr.ErrorCode, rr.ErrorMessage = user, f.code, f.message()
			resp.Results = append(resp.Results, rr)
		}
		for _, d := range r.Deletions {
			result(d.Name)
		}
		for _, u := range r.Upsertions {
			result(u.Name)
		}
	}),
	kmsg.DescribeUserSCRAMCredentials: answer(func(_ *kmsg.DescribeUserSCRAMCredentialsRequest, resp *kmsg.DescribeUserSCRAMCredentialsResponse, f failure) {
		resp.ErrorCode, resp.ErrorMessage = f.code, f.message()
	}),
	kmsg.AlterClientQuotas: answer(func(r *kmsg.AlterClientQuotasRequest, resp *kmsg.AlterClientQuotasResponse, f failure) {
		resp.Entries = each(r.Entries, func(e kmsg.AlterClientQuotasRequestEntry) kmsg.AlterClientQuotasResponseEntry {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode, re.ErrorMessage = f.code, f.message()
			re.Entity = each(e.Entity, func(c kmsg.AlterClientQuotasRequestEntryEntity) kmsg.AlterClientQuotasResponseEntryEntity {
				rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rc.Type, rc.Name = c.Type, c.Name
				return rc
			})
			return re
		})
	}),
	kmsg.DescribeClientQuotas: answer(func(_ *kmsg.DescribeClientQuotasRequest, resp *kmsg.DescribeClientQuotasResponse, f failure) {
		resp.ErrorCode, resp.ErrorMessage = f.code, f.message()
	}),
}
