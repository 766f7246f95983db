# A workspace of local files: the hashicorp/local provider needs no cloud
# account, so this example runs anywhere (driftwatch demo uses the same).
terraform {
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = "1.4.0"
    }
  }
}

variable "motd" {
  type    = string
  default = "welcome to the example workspace\n"
}

resource "local_file" "motd" {
  filename = "${path.module}/out/motd.txt"
  content  = var.motd
}

resource "local_file" "settings" {
  for_each = {
    "eu:west" = "region=eu-west-1\n"
    "us:east" = "region=us-east-1\n"
  }
  filename = "${path.module}/out/settings-${replace(each.key, ":", "-")}.conf"
  content  = each.value
}
